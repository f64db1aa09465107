/// The OpenAPI 3.1 description served at `/openapi.yaml` (a test checks it names every route).
enum OpenAPIDocument {
    static let yaml = #"""
        openapi: 3.1.0
        info:
          title: TabServer
          version: "1"
          summary: Tab-bar layouts for mobile apps, compiled from property lists or JSON.
          description: |
            Mobile clients read compiled layouts (no credentials) and revalidate with If-None-Match.
            Operators manage layouts with an admin bearer token. Errors are application/problem+json (RFC 9457).
        servers:
          - url: http://localhost:8080
        components:
          securitySchemes:
            admin:
              type: http
              scheme: bearer
          parameters:
            clientLocale: {name: locale, in: query, schema: {type: string}}
            clientPlatform: {name: platform, in: query, schema: {type: string, enum: [iphone, ipad, mac, tv, vision, android]}}
            clientAppVersion: {name: appVersion, in: query, schema: {type: string}}
            account:
              name: account
              in: path
              required: true
              schema: {type: string, pattern: '^[A-Za-z0-9._-]{1,128}$'}
            version:
              name: version
              in: path
              required: true
              schema: {type: integer, minimum: 1}
            locale:
              name: locale
              in: path
              required: true
              schema: {type: string, pattern: '^[A-Za-z]{2,8}([-_][A-Za-z0-9]{1,8})*$'}
            ifMatch:
              name: If-Match
              in: header
              schema: {type: string}
              description: The current ETag (strong comparison). Required to change an existing record (428 without it).
            ifNoneMatchStar:
              name: If-None-Match
              in: header
              schema: {type: string, enum: ['*']}
              description: Create only (412 if the record exists).
          headers:
            ETag:
              schema: {type: string}
              description: Strong entity tag.
            LayoutVersion:
              schema: {type: integer}
              description: The layout version number.
          schemas:
            Problem:
              type: object
              required: [type, title, status, detail]
              properties:
                type: {type: string}
                title: {type: string}
                status: {type: integer}
                detail: {type: string}
                errors:
                  type: array
                  items:
                    type: object
                    required: [pointer, message]
                    properties:
                      pointer: {type: string, description: JSON Pointer of the offending value}
                      line: {type: integer, minimum: 1}
                      message: {type: string}
            Tab:
              type: object
              required: [id, title, rootViewController, navigation, reselect]
              properties:
                id: {type: string}
                title: {type: string}
                titleKey: {type: string}
                image: {type: string}
                selectedImage: {type: string}
                rootViewController: {type: string}
                navigation: {type: boolean}
                reselect: {type: string, enum: [popToRoot, none]}
                badge: {type: string}
                params: {type: object}
                tag: {type: integer}
                children: {type: array, items: {$ref: '#/components/schemas/Tab'}}
            CompiledLayout:
              type: object
              required: [appearance, initialIndex, locale, tabs, layout]
              properties:
                appearance:
                  type: object
                  properties:
                    height: {type: number}
                    backgroundColor: {type: string}
                    tintColor: {type: string}
                    unselectedTintColor: {type: string}
                    animator:
                      type: object
                      properties:
                        name: {type: string}
                        params: {type: object}
                initialIndex: {type: integer}
                locale: {type: string}
                layout: {type: string}
                version: {type: integer}
                tabs: {type: array, items: {$ref: '#/components/schemas/Tab'}}
                more:
                  type: object
                  properties:
                    title: {type: string}
                    titleKey: {type: string}
                    image: {type: string}
                    selectedImage: {type: string}
                    tabs: {type: array, items: {$ref: '#/components/schemas/Tab'}}
            Written:
              type: object
              required: [account, version, etag]
              properties:
                account: {type: string}
                version: {type: integer}
                etag: {type: string}
            StringsWritten:
              type: object
              required: [locale, version, etag]
              properties:
                locale: {type: string}
                version: {type: integer}
                etag: {type: string}
            Versions:
              type: object
              required: [versions]
              properties:
                versions:
                  type: array
                  items:
                    type: object
                    required: [version, etag, createdAt, deleted]
                    properties:
                      version: {type: integer}
                      etag: {type: string}
                      createdAt: {type: string, format: date-time}
                      author: {type: string}
                      message: {type: string}
                      restoredFrom: {type: integer}
                      deleted: {type: boolean}
            Accounts:
              type: object
              required: [accounts, next]
              properties:
                accounts:
                  type: array
                  items:
                    type: object
                    required: [account, version, etag, updatedAt]
                    properties:
                      account: {type: string}
                      version: {type: integer}
                      etag: {type: string}
                      updatedAt: {type: string, format: date-time}
                next: {type: [string, 'null']}
          requestBodies:
            Source:
              required: true
              description: A layout source (LAYOUT.md), at most 1 MiB.
              content:
                application/json: {schema: {type: object}}
                application/x-plist: {schema: {type: string}}
                application/xml: {schema: {type: string}}
                text/xml: {schema: {type: string}}
                application/octet-stream: {schema: {type: string, format: binary}}
          responses:
            Problem:
              description: A problem (RFC 9457).
              content:
                application/problem+json:
                  schema: {$ref: '#/components/schemas/Problem'}
            Written:
              description: The new version.
              headers:
                ETag: {$ref: '#/components/headers/ETag'}
                Layout-Version: {$ref: '#/components/headers/LayoutVersion'}
              content:
                application/json:
                  schema: {$ref: '#/components/schemas/Written'}
        paths:
          /v1/accounts/{account}/tabs:
            parameters:
              - $ref: '#/components/parameters/account'
              - $ref: '#/components/parameters/clientLocale'
              - $ref: '#/components/parameters/clientPlatform'
              - $ref: '#/components/parameters/clientAppVersion'
              - {name: Accept-Language, in: header, schema: {type: string}}
              - {name: X-Client-Platform, in: header, schema: {type: string}}
              - {name: X-App-Version, in: header, schema: {type: string}}
              - {name: If-None-Match, in: header, schema: {type: string}}
              - {name: If-Modified-Since, in: header, schema: {type: string}}
            get:
              summary: The compiled layout of an account (default's when it has none).
              responses:
                '200':
                  description: The compiled layout.
                  headers:
                    ETag: {$ref: '#/components/headers/ETag'}
                  content:
                    application/json:
                      schema: {$ref: '#/components/schemas/CompiledLayout'}
                    application/x-plist:
                      schema: {type: string}
                '304': {description: Not modified (same ETag, no body).}
                '400': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
                '406': {$ref: '#/components/responses/Problem'}
                '503': {$ref: '#/components/responses/Problem'}
            head:
              summary: The headers GET would send.
              responses:
                '200': {description: Headers only.}
                '304': {description: Not modified.}
                '400': {description: Bad account id or client parameters.}
                '404': {description: No layout.}
                '406': {description: Not acceptable.}
                '503': {description: Busy (held requests or variant builds at their limit); see Retry-After.}
          /v1/accounts/{account}/ApplicationHierarchy.plist:
            parameters:
              - $ref: '#/components/parameters/account'
              - $ref: '#/components/parameters/clientLocale'
              - $ref: '#/components/parameters/clientPlatform'
              - $ref: '#/components/parameters/clientAppVersion'
            get:
              summary: Seed 000's ApplicationHierarchy array, localized, as an XML property list.
              responses:
                '200':
                  description: The array.
                  content:
                    application/x-plist: {schema: {type: string}}
                '304': {description: Not modified.}
                '400': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
                '406': {$ref: '#/components/responses/Problem'}
                '503': {$ref: '#/components/responses/Problem'}
            head:
              summary: The headers GET would send.
              responses:
                '200': {description: Headers only.}
                '304': {description: Not modified.}
                '400': {description: Bad request.}
                '404': {description: No layout.}
                '406': {description: Not acceptable.}
                '503': {description: Busy (held requests or variant builds at their limit); see Retry-After.}
          /v1/accounts/{account}/tabs/preview.svg:
            parameters:
              - $ref: '#/components/parameters/account'
              - $ref: '#/components/parameters/clientLocale'
              - $ref: '#/components/parameters/clientPlatform'
              - $ref: '#/components/parameters/clientAppVersion'
              - {name: selected, in: query, schema: {type: string}}
            get:
              summary: The compiled layout drawn as a tab bar (SVG 1.1), same negotiation as tabs.
              responses:
                '200':
                  description: The drawing.
                  content:
                    image/svg+xml: {schema: {type: string}}
                '304': {description: Not modified.}
                '400': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
                '406': {$ref: '#/components/responses/Problem'}
                '503': {$ref: '#/components/responses/Problem'}
            head:
              summary: The headers GET would send.
              responses:
                '200': {description: Headers only.}
                '304': {description: Not modified.}
                '400': {description: Bad account id or client parameters.}
                '404': {description: No layout.}
                '406': {description: Not acceptable.}
                '503': {description: Busy (held requests or variant builds at their limit); see Retry-After.}
          /v1/accounts/{account}/tabs/bundle:
            parameters:
              - $ref: '#/components/parameters/account'
              - {name: locale, in: query, schema: {type: array, maxItems: 64, items: {type: string}}, style: form, explode: true}
              - $ref: '#/components/parameters/clientPlatform'
              - $ref: '#/components/parameters/clientAppVersion'
            get:
              summary: 'What an app ships in its bundle, per locale: the compiled layout and the ETags tabs gives for it.'
              responses:
                '200':
                  description: The bundle.
                  content:
                    application/json: {schema: {type: object}}
                '400': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
            head:
              summary: The headers GET would send.
              responses:
                '200': {description: Headers only.}
                '400': {description: Bad account id or client parameters.}
                '404': {description: No layout.}
          /v1/accounts:
            get:
              summary: Accounts with a layout of their own, by name.
              security: [{admin: []}]
              parameters:
                - {name: after, in: query, schema: {type: string}}
                - {name: limit, in: query, schema: {type: integer, minimum: 1, maximum: 1000}}
              responses:
                '200':
                  description: One page.
                  content:
                    application/json: {schema: {$ref: '#/components/schemas/Accounts'}}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
          /v1/accounts/{account}/layout:
            parameters:
              - $ref: '#/components/parameters/account'
            get:
              summary: The current source, byte for byte as uploaded.
              security: [{admin: []}]
              responses:
                '200':
                  description: The source as uploaded (any JSON or property list, seed 000's array included).
                  headers:
                    ETag: {$ref: '#/components/headers/ETag'}
                    Layout-Version: {$ref: '#/components/headers/LayoutVersion'}
                  content:
                    application/json: {schema: {}}
                    application/x-plist: {schema: {}}
                    application/xml: {schema: {}}
                    text/xml: {schema: {}}
                    application/octet-stream: {schema: {}}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
            put:
              summary: Store a new version (or, with dryRun=true, only compile it).
              security: [{admin: []}]
              parameters:
                - $ref: '#/components/parameters/ifMatch'
                - $ref: '#/components/parameters/ifNoneMatchStar'
                - {name: dryRun, in: query, schema: {type: boolean}}
                - {name: Change-Message, in: header, schema: {type: string}}
              requestBody: {$ref: '#/components/requestBodies/Source'}
              responses:
                '200': {$ref: '#/components/responses/Written'}
                '201': {$ref: '#/components/responses/Written'}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
                '412': {$ref: '#/components/responses/Problem'}
                '413': {$ref: '#/components/responses/Problem'}
                '415': {$ref: '#/components/responses/Problem'}
                '422': {$ref: '#/components/responses/Problem'}
                '428': {$ref: '#/components/responses/Problem'}
            patch:
              summary: JSON Patch (RFC 6902) or JSON Merge Patch (RFC 7396) on the JSON form of the source.
              security: [{admin: []}]
              parameters:
                - $ref: '#/components/parameters/ifMatch'
              requestBody:
                required: true
                content:
                  application/json-patch+json: {schema: {type: array, items: {type: object}}}
                  application/merge-patch+json: {schema: {type: object}}
              responses:
                '200': {$ref: '#/components/responses/Written'}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
                '412': {$ref: '#/components/responses/Problem'}
                '415': {$ref: '#/components/responses/Problem'}
                '422': {$ref: '#/components/responses/Problem'}
                '428': {$ref: '#/components/responses/Problem'}
            delete:
              summary: Delete the layout (history kept; the account falls back to default).
              security: [{admin: []}]
              parameters:
                - $ref: '#/components/parameters/ifMatch'
              responses:
                '204': {description: Deleted.}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
                '409': {$ref: '#/components/responses/Problem'}
                '412': {$ref: '#/components/responses/Problem'}
                '428': {$ref: '#/components/responses/Problem'}
          /v1/accounts/{account}/layout/versions:
            parameters:
              - $ref: '#/components/parameters/account'
            get:
              summary: Every version, newest first.
              security: [{admin: []}]
              responses:
                '200':
                  description: The history.
                  content:
                    application/json: {schema: {$ref: '#/components/schemas/Versions'}}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
          /v1/accounts/{account}/layout/versions/{version}:
            parameters:
              - $ref: '#/components/parameters/account'
              - $ref: '#/components/parameters/version'
            get:
              summary: One version's source.
              security: [{admin: []}]
              responses:
                '200': {description: The source, with its Content-Type, ETag and Layout-Version.}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
          /v1/accounts/{account}/layout/versions/{version}/diff:
            parameters:
              - $ref: '#/components/parameters/account'
              - $ref: '#/components/parameters/version'
              - {name: against, in: query, schema: {type: integer, minimum: 1}}
            get:
              summary: Tab-level changes from version `against` (default n-1) to n; text/plain gives one line per change.
              security: [{admin: []}]
              responses:
                '200':
                  description: The changes.
                  content:
                    application/json: {schema: {type: object}}
                    text/plain: {schema: {type: string}}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
          /v1/accounts/{account}/layout/versions/{version}/restore:
            parameters:
              - $ref: '#/components/parameters/account'
              - $ref: '#/components/parameters/version'
            post:
              summary: A new version whose content is that version's.
              security: [{admin: []}]
              parameters:
                - $ref: '#/components/parameters/ifMatch'
              responses:
                '200': {$ref: '#/components/responses/Written'}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
                '412': {$ref: '#/components/responses/Problem'}
                '422': {$ref: '#/components/responses/Problem'}
                '428': {$ref: '#/components/responses/Problem'}
          /v1/validate:
            post:
              summary: Compile a source and store nothing.
              security: [{admin: []}]
              requestBody: {$ref: '#/components/requestBodies/Source'}
              responses:
                '200':
                  description: The compiled layout (default locale).
                  content:
                    application/json: {schema: {$ref: '#/components/schemas/CompiledLayout'}}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
                '413': {$ref: '#/components/responses/Problem'}
                '415': {$ref: '#/components/responses/Problem'}
                '422': {$ref: '#/components/responses/Problem'}
          /v1/preview:
            post:
              summary: Draw an unsaved source as tabs/preview.svg would, storing nothing.
              security: [{admin: []}]
              requestBody: {$ref: '#/components/requestBodies/Source'}
              responses:
                '200':
                  description: The drawing.
                  content:
                    image/svg+xml: {schema: {type: string}}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
                '413': {$ref: '#/components/responses/Problem'}
                '415': {$ref: '#/components/responses/Problem'}
                '422': {$ref: '#/components/responses/Problem'}
          /v1/events:
            get:
              summary: Server-sent events, one per stored version; Last-Event-ID resumes.
              security: [{admin: []}]
              parameters:
                - {name: Last-Event-ID, in: header, schema: {type: string}}
              responses:
                '200':
                  description: Events (text/event-stream).
                  content:
                    text/event-stream: {schema: {type: string}}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
          /console:
            get:
              summary: Redirects to /console/.
              responses:
                '308': {description: To /console/.}
          /console/:
            get:
              summary: The operators' web console.
              responses:
                '200':
                  description: index.html
                  content:
                    text/html: {schema: {type: string}}
          /console/{file}:
            parameters:
              - {name: file, in: path, required: true, schema: {type: string}}
            get:
              summary: A file of the web console.
              responses:
                '200': {description: The file.}
                '400': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
          /v1/strings/{locale}:
            parameters:
              - $ref: '#/components/parameters/locale'
            get:
              summary: A global strings table as uploaded.
              security: [{admin: []}]
              responses:
                '200': {description: The table, with its Content-Type and ETag.}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
                '404': {$ref: '#/components/responses/Problem'}
            put:
              summary: Store a new version of a global strings table.
              security: [{admin: []}]
              parameters:
                - $ref: '#/components/parameters/ifMatch'
                - $ref: '#/components/parameters/ifNoneMatchStar'
              requestBody:
                required: true
                content:
                  text/plain: {schema: {type: string}}
                  application/json: {schema: {type: object, additionalProperties: {type: string}}}
              responses:
                '200':
                  description: Updated.
                  content:
                    application/json: {schema: {$ref: '#/components/schemas/StringsWritten'}}
                '201':
                  description: Created.
                  content:
                    application/json: {schema: {$ref: '#/components/schemas/StringsWritten'}}
                '400': {$ref: '#/components/responses/Problem'}
                '401': {$ref: '#/components/responses/Problem'}
                '429': {$ref: '#/components/responses/Problem'}
                '412': {$ref: '#/components/responses/Problem'}
                '415': {$ref: '#/components/responses/Problem'}
                '422': {$ref: '#/components/responses/Problem'}
                '428': {$ref: '#/components/responses/Problem'}
          /healthz:
            get:
              summary: The process is alive.
              responses:
                '200': {description: Alive.}
          /readyz:
            get:
              summary: The store answers.
              responses:
                '200': {description: Ready.}
                '503': {$ref: '#/components/responses/Problem'}
          /metrics:
            get:
              summary: Prometheus text format.
              responses:
                '200':
                  description: Metrics.
                  content:
                    text/plain: {schema: {type: string}}
          /openapi.yaml:
            get:
              summary: This document.
              responses:
                '200':
                  description: OpenAPI 3.1.
                  content:
                    application/yaml: {schema: {type: string}}
        """#
}
