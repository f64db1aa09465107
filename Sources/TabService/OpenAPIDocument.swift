/// The OpenAPI 3.1 description served at `/openapi.yaml`: the shared components below, and `paths` generated from
/// the route table (each route's operation, its parameters from its declared inputs, its security and 401/429 from its
/// access, 503/507 from touching the store, HEAD from GET).
enum OpenAPIDocument {
    static let yaml = components + "\n" + paths(TabService.routeTable)

    /// Everything but `paths`: info, security schemes, and the parameters, headers, bodies, responses and schemas
    /// operations refer to.
    static let components = #"""
        openapi: 3.1.0
        info:
          title: TabServer
          version: "1"
          summary: Tab-bar layouts for mobile apps, compiled from property lists or JSON.
          description: |
            Mobile clients read compiled layouts (no credentials) and revalidate with If-None-Match.
            Operators manage layouts with a bearer token holding the scope each operation lists. Errors are application/problem+json (RFC 9457).
        servers:
          - url: http://localhost:8080
        components:
          securitySchemes:
            bearer:
              type: http
              scheme: bearer
              description: |
                A bootstrap token (TABSERVER_ADMIN_TOKEN, admin) or an API token (tsk_…) from POST /v1/tokens. Each
                operation lists the scope it needs: read, write (implies read), deploy (implies read), admin (all).
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
                accessibilityLabel: {type: string}
                accessibilityLabelKey: {type: string}
                accessibilityHint: {type: string}
                accessibilityHintKey: {type: string}
                role: {type: string, enum: [search]}
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
                    dark:
                      type: object
                      properties:
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
                    accessibilityLabel: {type: string}
                    accessibilityLabelKey: {type: string}
                    accessibilityHint: {type: string}
                    accessibilityHintKey: {type: string}
                    tabs: {type: array, items: {$ref: '#/components/schemas/Tab'}}
                groups:
                  type: array
                  items:
                    type: object
                    required: [id, title, tabs]
                    properties:
                      id: {type: string}
                      title: {type: string}
                      titleKey: {type: string}
                      tabs: {type: array, items: {type: string}}
                warnings: {$ref: '#/components/schemas/LintWarnings'}
            LintWarnings:
              type: array
              description: The lint's advice on a layout that compiles (a write with warnings still succeeds).
              items:
                type: object
                required: [pointer, rule, message]
                properties:
                  pointer: {type: string, description: JSON Pointer into the layout}
                  rule: {type: string, enum: [android-more, iphone-overflow, icon-only, contrast, missing-string]}
                  message: {type: string}
            Written:
              type: object
              required: [account, version, etag]
              properties:
                account: {type: string}
                version: {type: integer}
                etag: {type: string}
                warnings: {$ref: '#/components/schemas/LintWarnings'}
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
                      revoked:
                        type: object
                        required: [reason, revokedAt, revokedBy]
                        properties:
                          reason: {type: string}
                          revokedAt: {type: string, format: date-time}
                          revokedBy: {type: string}
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
            TokenSpec:
              type: object
              required: [name, scopes]
              additionalProperties: false
              properties:
                name: {type: string, minLength: 1, maxLength: 128}
                scopes: {type: array, minItems: 1, items: {type: string, enum: [read, write, deploy, rollback, approve, admin]}}
                accounts: {type: array, minItems: 1, items: {type: string, pattern: '^[A-Za-z0-9._*?-]{1,128}$'}}
                environments: {type: array, minItems: 1, items: {type: string}}
                expiresAt: {type: [string, 'null'], format: date-time}
            Token:
              type: object
              required: [id, name, scopes, accounts, environments, expiresAt, createdAt, createdBy, lastUsedAt, revokedAt]
              properties:
                id: {type: string, pattern: '^[a-z2-7]{16}$'}
                name: {type: string}
                token: {type: string, description: 'tsk_<id>_<secret>: only when made or rotated.'}
                scopes: {type: array, items: {type: string, enum: [read, write, deploy, rollback, approve, admin]}}
                accounts: {type: array, items: {type: string}}
                environments: {type: [array, 'null'], items: {type: string}}
                expiresAt: {type: [string, 'null'], format: date-time}
                createdAt: {type: string, format: date-time}
                createdBy: {type: string}
                lastUsedAt: {type: [string, 'null'], format: date-time}
                revokedAt: {type: [string, 'null'], format: date-time}
            AuditPage:
              type: object
              required: [entries, next]
              properties:
                entries:
                  type: array
                  items:
                    type: object
                    required: [id, at, actor, tokenId, address, method, path, action, status, count]
                    properties:
                      id: {type: integer}
                      at: {type: string, format: date-time}
                      actor: {type: string}
                      tokenId: {type: [string, 'null']}
                      address: {type: string}
                      method: {type: string}
                      path: {type: string}
                      action: {type: string}
                      account: {type: string}
                      environment: {type: string}
                      version: {type: integer}
                      status: {type: integer}
                      requestId: {type: string}
                      count: {type: integer}
                next: {type: [string, 'null']}
          requestBodies:
            Source:
              required: true
              description: A layout source (a JSON or property-list document), at most 1 MiB.
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
        """#

    /// The `paths` object: one entry per template, one operation per route.
    static func paths(_ table: RouteTable) -> String {
        var out = "paths:\n"
        for template in table.templates {
            out += "  \(template.template):\n"
            if !template.parameterNames.isEmpty {
                out += "    parameters:\n"
                for name in template.parameterNames {
                    let declared = template.routes.lazy.flatMap { table.routes[$0.index].inputs }.first {
                        $0.location == .path && $0.name == name
                    }
                    out += "      - \(declared?.parameterYAML ?? pathParameter(name))\n"
                }
            }
            for (method, index) in template.routes {
                let route = table.routes[index]
                out += operation(
                    route, method: method.token.lowercased(), summary: route.operation.summary, responses: route.operation.responses)
                if method == .get {
                    let head = route.operation.responses.map {
                        (status: $0.status, yaml: "{description: \(quoted(headDescription($0.status)))}")
                    }
                    out += operation(route, method: "head", summary: "The headers GET would send.", responses: head, body: false)
                }
            }
        }
        return out
    }

    private static func operation(
        _ route: Endpoint, method: String, summary: String, responses: [(status: Int, yaml: String)], body: Bool = true
    ) -> String {
        var out = "    \(method):\n      summary: \(quoted(summary))\n"
        var answers = responses
        // Any request can be malformed (a control character in the path, a bad field): 400 is always an answer.
        if !answers.contains(where: { $0.status == 400 }) {
            answers.append((400, body ? APIOperation.problem : "{description: \(quoted(headDescription(400)))}"))
        }
        if let scope = route.access.scope {
            out += "      security: [{bearer: [\(scope.rawValue)]}]\n"
            answers += [(401, APIOperation.problem), (403, APIOperation.problem), (429, APIOperation.problem)]
        }
        // What a bad value of a declared input gets (an environment the service does not have: 404).
        for status in Set(route.inputs.flatMap(\.refusals)).sorted() where !answers.contains(where: { $0.status == status }) {
            answers.append((status, body ? APIOperation.problem : "{description: \(quoted(headDescription(status)))}"))
        }
        // What the store answers when it cannot: no answer (503), a full disk (507).
        if route.touchesStore {
            for status in [503, 507] where !answers.contains(where: { $0.status == status }) {
                answers.append((status, body ? APIOperation.problem : "{description: \(quoted(headDescription(status)))}"))
            }
        }
        let parameters = route.inputs.filter { $0.location != .path }.flatMap(\.parameterYAMLs) + route.operation.parameters
        if !parameters.isEmpty {
            out += "      parameters:\n" + parameters.map { "        - \($0)\n" }.joined()
        }
        if body, let requestBody = route.operation.requestBody { out += member("requestBody", requestBody, indent: 6) }
        out += "      responses:\n"
        for (status, yaml) in answers.sorted(by: { $0.status < $1.status }) { out += member("'\(status)'", yaml, indent: 8) }
        return out
    }

    /// `key: value` for a one-line value, or `key:` and the value's lines indented under it.
    private static func member(_ key: String, _ value: String, indent: Int) -> String {
        let pad = String(repeating: " ", count: indent)
        guard value.contains("\n") else { return "\(pad)\(key): \(value)\n" }
        return "\(pad)\(key):\n" + value.split(separator: "\n").map { "\(pad)  \($0)\n" }.joined()
    }

    /// A path parameter of a template: the shared component where there is one.
    private static func pathParameter(_ name: String) -> String {
        ["account", "version", "locale"].contains(name)
            ? APIParameter.component(name).yaml : APIParameter(name, in: "path", .string(), required: true).yaml
    }

    private static func headDescription(_ status: Int) -> String {
        switch status {
        case 200: "Headers only."
        case 304: "Not modified."
        case 404: "Not found."
        case 406: "Not acceptable."
        case 503: "Busy; see Retry-After."
        default: "Status \(status), without a body."
        }
    }

    /// A YAML single-quoted scalar.
    private static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "''") + "'" }
}
