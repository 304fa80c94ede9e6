import Foundation
import Combine

/// Errors the downloader reports.
enum DownloadError: Error {
    case badStatus(Int)
    case empty
}

protocol Cache {
    func value(for key: URL) -> Data?
    func store(_ data: Data, for key: URL)
}

/// Fetches files, answering from the cache when it can.
final class Downloader {
    private let session: URLSession
    private let cache: Cache

    init(session: URLSession = .shared, cache: Cache) {
        self.session = session
        self.cache = cache
    }

    /// Download `url`, or return the cached copy.
    func fetch(_ url: URL) async throws -> Data {
        if let hit = cache.value(for: url) {
            return hit
        }
        let (data, response) = try await session.data(from: url)
        try validate(response)
        cache.store(data, for: url)
        return data
    }

    private func validate(_ response: URLResponse) throws {
        guard let http = response as? HTTPURLResponse else { return }
        if http.statusCode != 200 {
            throw DownloadError.badStatus(http.statusCode)
        }
    }
}

struct Progress {
    var done: Int
    var total: Int
}
