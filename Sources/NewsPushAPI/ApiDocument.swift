import Foundation
import Hummingbird
import NIOCore

/// The OpenAPI 3.1 document of `newspush api` (`Sources/NewsPushAPI/openapi.json`, served at
/// `GET /openapi.json`), for app developers to generate their clients from.
public enum ApiDocument {
    /// The document's bytes.
    public static let data: Data = {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "json"),
            let data = try? Data(contentsOf: url)
        else { return Data("{}".utf8) }
        return data
    }()

    static func response() -> Response {
        var response = Response(
            status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
        response.headers[.cacheControl] = "public, max-age=300"
        return response
    }
}
