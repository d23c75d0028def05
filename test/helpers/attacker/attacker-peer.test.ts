import { createConnection, createServer, type Server, type Socket } from 'node:net'
import { expect } from 'chai'
import { AttackerPeer } from './attacker-peer.js'

/**
 * A node resets the inbound connections it has no room for (libp2p's cap on handshakes under way,
 * 10 at once): twenty ground-id peers joining the quorums at the same moment got about half of
 * their dials reset and the attack bench stopped. The owner's peers come back until they are in.
 */
describe('helpers: the cheating owner\'s peer', function () {
  this.timeout(60_000)
  let target: AttackerPeer
  let peer: AttackerPeer
  let front: Server
  const sockets = new Set<Socket>()

  before(async () => {
    target = await AttackerPeer.start()
    peer = await AttackerPeer.start()
  })
  after(async () => {
    for (const s of sockets) s.destroy()
    front?.close()
    await peer?.stop()
    await target?.stop()
  })

  it('joins a node that resets its first dials (a node with no room for more handshakes) by dialling again', async () => {
    const addr = target.host.multiaddrs().find((a) => a.startsWith('/ip4/127.0.0.1/'))!
    const port = Number(addr.split('/')[4])
    let reset = 0
    // in front of the target: the first two connections are reset as a full node resets them, the
    // rest are passed through
    front = createServer((s) => {
      sockets.add(s)
      if (reset < 2) { reset++; s.resetAndDestroy(); return }
      const up = createConnection({ host: '127.0.0.1', port })
      sockets.add(up)
      s.pipe(up).pipe(s)
      s.on('error', () => up.destroy())
      up.on('error', () => s.destroy())
    })
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve))
    const frontPort = (front.address() as { port: number }).port
    const [id] = await peer.connect([`/ip4/127.0.0.1/tcp/${frontPort}/p2p/${target.peerId}`], { deadlineMs: 30_000 })
    expect(id).to.equal(target.peerId)
    expect(reset).to.equal(2)
  })
})
