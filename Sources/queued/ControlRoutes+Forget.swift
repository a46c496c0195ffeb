import Dispatch
import EventQueue
import EventQueueCommandLine
import EventQueueDelivery
import NIOHTTP1

#if canImport(Glibc)
    import Glibc
#endif

/// `POST /forget?external_id=u1&braze_delete=true` (`ForgetRequest`): one user forgotten as `queuectl forget` does,
/// on a connection of its own on a thread of its own, never on the store's executor: the scrub holds the write lock
/// for up to a quarter of the busy timeout, and acks, claims and lease renewals must not wait behind it. The user's
/// records in flight are deleted too, and the erasure waits for their requests (its `after`). With a Braze delete
/// it launches a pass, so the deletion goes out now.
extension ControlRoutes {
    func forget(query: String, _ writer: ResponseWriter, peer: PeerCredentials) async throws {
        let request: ForgetRequest
        do {
            request = try ForgetRequest(parsing: query)
        } catch {
            try await writer.fail(.badRequest, error.description, exitStatus: .usage)
            return
        }
        let user = request.user
        let brazeDelete = request.brazeDelete
        if brazeDelete, !PeerPolicy.admins(daemonUID: getuid()).allows(peer) {
            try await writer.fail(
                .forbidden,
                "uid \(peer.uid) may not delete users at Braze: only root, the daemon's user and members of "
                    + "\(ErasureKey.adminGroup) may; forget without braze_delete removes the user from this queue "
                    + "only (nothing was changed)", exitStatus: .refused)
            return
        }
        do {
            let path = store.path
            let report = try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(
                        with: Result { () throws(QueueError) -> ForgetReport in
                            let queue = try QueueWriter(path: path)
                            defer { queue.close() }
                            return try queue.forget([user], brazeDelete: brazeDelete)
                        })
                }
            }
            if !report.erasureIDs.isEmpty { coordinator.launch() }
            try await writer.send(.ok, json: .object(ForgetReportJSON.json(report, by: .daemon)))
        } catch let error as QueueError {
            let status = ExitStatus(error)
            let answer: HTTPResponseStatus =
                status == .invalidInput ? .badRequest : status == .busy ? .serviceUnavailable : .internalServerError
            try await writer.fail(answer, error.description, exitStatus: status)
        }
    }
}
