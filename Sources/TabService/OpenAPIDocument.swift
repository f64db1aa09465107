enum OpenAPIDocument { static let yaml = "openapi: 3.1.0\n" }
