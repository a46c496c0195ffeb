// Scenario 8: the peer. persist-queue's SQLiteAckQueue (Python, from PyPI, in the bench's virtual environment)
// against EventQueue on the same workload: put N records one transaction each, then get + ack them one at a
// time. Both use WAL and synchronous = FULL. Rounds alternate between the two.
import EventQueue
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

func eventQueuePeerRound(path: String, count: Int) throws -> (put: Double, getAck: Double) {
    removeDatabase(path)
    let writer = try QueueWriter(path: path, options: QueueOptions(minimumFreeBytes: 0))
    var start = now()
    for index in 0..<count { try writer.enqueue(makeRecord(index)) }
    let put = Double(count) / seconds(since: start)
    writer.close()
    let consumer = try QueueConsumer(path: path)
    start = now()
    var got = 0
    while true {
        let claim = try consumer.claim(limit: 1, leaseMilliseconds: 60_000)
        guard let record = claim.records.first else { break }
        try consumer.ack([record.id], lease: claim.lease)
        got += 1
    }
    let getAck = Double(got) / seconds(since: start)
    consumer.close()
    removeDatabase(path)
    guard got == count else { throw BenchError("peer: got \(got) of \(count)") }
    return (put, getAck)
}

func runPeerScenario(_ settings: Settings, _ results: Results) throws {
    let count = settings.quick ? 500 : 2_000
    let rounds = settings.quick ? 2 : 3
    let script = settings.supportDirectory + "/persistqueue_peer.py"
    log("== 8. peer: persist-queue SQLiteAckQueue vs EventQueue, \(count) puts then get+ack each; \(rounds) rounds")
    var peerPut: [Double] = []
    var peerGet: [Double] = []
    var eqPut: [Double] = []
    var eqGet: [Double] = []
    var info: [String: Any] = [:]
    let path = freshPath(settings, "peer")
    for round in 0..<rounds {
        let runPeer = {
            let result = try runChild(
                settings.python, [script, "\(settings.directory)/eventqueue-bench-\(getpid())-pq", String(count)])
            guard result.status == 0, let data = result.output.data(using: .utf8),
                let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                let put = object["put_per_s"] as? Double, let get = object["get_ack_per_s"] as? Double
            else { throw BenchError("persist-queue run failed: \(result.output)") }
            peerPut.append(put)
            peerGet.append(get)
            info = object
        }
        if round % 2 == 0 { try runPeer() }
        let eq = try eventQueuePeerRound(path: path, count: count)
        eqPut.append(eq.put)
        eqGet.append(eq.getAck)
        if round % 2 == 1 { try runPeer() }
    }
    let putRatio = median(eqPut) / median(peerPut)
    let getRatio = median(eqGet) / median(peerGet)
    log(pad("operation", 20) + pad("persist-queue/s", 17) + pad("EventQueue/s", 14) + "EventQueue / persist-queue")
    log(
        pad("put", 20) + pad(format(median(peerPut)), 17) + pad(format(median(eqPut)), 14)
            + format(putRatio, decimals: 2))
    log(
        pad("get + ack", 20) + pad(format(median(peerGet)), 17) + pad(format(median(eqGet)), 14)
            + format(getRatio, decimals: 2))
    results.scenarios["peer"] = [
        "count": count, "persistqueue_put_per_s": median(peerPut), "persistqueue_get_ack_per_s": median(peerGet),
        "eventqueue_put_per_s": median(eqPut), "eventqueue_get_ack_per_s": median(eqGet), "put_ratio": putRatio,
        "get_ack_ratio": getRatio, "persistqueue": info,
    ]
}
