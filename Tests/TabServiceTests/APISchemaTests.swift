import TabAccess
import Testing

@testable import TabService

/// Bodies and answers stated as ``APISchema`` values come out as the YAML `openapi.yaml` had written by hand.
struct APISchemaTests {
    @Test func aShortSchemaIsOneFlowLineWithWordsQuotedWhereYAMLWouldReadThemOtherwise() {
        let schema = APISchema.array(.string(values: ["a-b", "null", "*"]), maxItems: 5)
        #expect(schema.node.yaml == "{type: array, maxItems: 5, items: {type: string, enum: [a-b, 'null', '*']}}")
        #expect(APISchema.anyObject.orNull.described("it's").node.yaml == "{type: [object, 'null'], description: 'it''s'}")
    }

    @Test func aLongSchemaIsBlockStyleItsShortMembersFlow() {
        let schema = APISchema.object(
            ["from": .string(), "to": .string(), "guard": APISchema.anyObject.orNull, "kinds": .array(.string(values: ["a"]))],
            required: ["from"])
        #expect(
            schema.node.yaml == """
                type: object
                required: [from]
                properties:
                  from: {type: string}
                  to: {type: string}
                  guard: {type: [object, 'null']}
                  kinds: {type: array, items: {type: string, enum: [a]}}
                """)
    }

    @Test func aMapOfOneLongMemberStillStartsItsOwnLine() {
        let answer = APIOperation.json(
            "Each arm's installs.", .object(additionalProperties: .object(required: ["installs", "failed", "byKind", "byTab", "more"])))
        #expect(
            answer == """
                description: 'Each arm''s installs.'
                content:
                  application/json:
                    schema:
                      type: object
                      additionalProperties: {type: object, required: [installs, failed, byKind, byTab, more]}
                """)
    }

    @Test func aBodyIsRequiredJSONAndProblemsAreTheSharedAnswer() {
        let operation = APIOperation(
            "Probe.", body: .object(["reason": .string(minLength: 1)], required: ["reason"]), responses: [(200, "{description: OK.}")],
            problems: [404, 422])
        #expect(
            operation.requestBody == """
                required: true
                content:
                  application/json: {schema: {type: object, required: [reason], properties: {reason: {type: string, minLength: 1}}}}
                """)
        #expect(operation.responses.map(\.status) == [200, 404, 422])
        #expect(operation.responses.dropFirst().allSatisfy { $0.yaml == APIOperation.problem })
    }

    @Test func anAnswerWithoutABodyIsItsDescriptionAndAnOptionalBodySaysSo() {
        #expect(APIOperation.answer("Not modified.") == "{description: 'Not modified.'}")
        let operation = APIOperation("Rotate.", body: .object(["overlap": .string()], closed: true), bodyRequired: false)
        #expect(
            operation.requestBody == """
                required: false
                content:
                  application/json: {schema: {type: object, properties: {overlap: {type: string}}, additionalProperties: false}}
                """)
        let short = APIOperation("Roll back.", body: .object(["reason": .string()]), bodyRequired: false)
        #expect(
            short.requestBody == """
                required: false
                content: {application/json: {schema: {type: object, properties: {reason: {type: string}}}}}
                """)
    }

    @Test func parametersAHandlerReadsItselfAreOneFlowLineEach() {
        #expect(
            APIParameter.query("locale", .array(.string(), maxItems: 64), exploded: true).yaml
                == "{name: locale, in: query, schema: {type: array, maxItems: 64, items: {type: string}}, style: form, explode: true}")
        #expect(
            APIParameter.query("version", .integer(minimum: 1), required: true, description: "It's this.").yaml
                == "{name: version, in: query, required: true, description: 'It''s this.', schema: {type: integer, minimum: 1}}")
        #expect(APIParameter.header("If-None-Match").yaml == "{name: If-None-Match, in: header, schema: {type: string}}")
        #expect(APIParameter.component("clientLocale").yaml == "$ref: '#/components/parameters/clientLocale'")
        #expect(APIHeader.component("ETag").node.flow == "{$ref: '#/components/headers/ETag'}")
    }

    @Test func aRouteInputsSchemaIsAValueRenderedAsItsParameter() {
        #expect(APISchema.string(pattern: "^[a-z2-7]{16}$").node.yaml == "{type: string, pattern: '^[a-z2-7]{16}$'}")
        #expect(APISchema.integer(minimum: 1, maximum: 1000).node.yaml == "{type: integer, minimum: 1, maximum: 1000}")
        #expect(
            RouteInput.path("id", TokenID.self).parameterYAML
                == "{name: id, in: path, required: true, schema: {type: string, pattern: '^[a-z2-7]{16}$'}}")
        #expect(
            RouteInput.query("platform", orHeader: "X-Client-Platform", ClientPlatform.self).parameterYAMLs.last
                == "{name: X-Client-Platform, in: header, description: 'As ?platform= (which wins).', "
                + "schema: {type: string, enum: [iphone, ipad, mac, tv, vision, android]}}")
    }
}
