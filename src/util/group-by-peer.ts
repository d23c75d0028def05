/**
 * Inverts "each item and the peers to ask about it" into "each peer and the items to ask it",
 * leaving `self` out: one request per peer instead of one per item and peer.
 */
export function groupByPeer<T> (entries: Iterable<readonly [T, Iterable<string>]>, self: string): Map<string, T[]> {
  const byPeer = new Map<string, T[]>()
  for (const [item, peers] of entries) {
    for (const p of peers) {
      if (p === self) continue
      const l = byPeer.get(p)
      if (l === undefined) byPeer.set(p, [item]); else l.push(item)
    }
  }
  return byPeer
}
