import '../../src/util/polyfill.js'
import { expect } from 'chai'
import { createRpc, type BuiltinMethods, type Rpc, type RpcClient } from '../../src/p2p/rpc.js'
import type { P2pHost } from '../../src/p2p/host.js'
import { arbiterRpcHandlers, type ArbiterMethods } from '../../src/node/consensus/arbiter-rpc.js'
import type { ArbiterCommittee } from '../../src/node/consensus/arbiter-committee.js'
import { memoryCollection } from '../helpers/memory-collection.js'
import { MATURITY, committeeOf, fourSeats, junkReg } from '../unit/node/consensus/committee-fixture.js'
import { connect, startHosts, stopAll } from './helpers.js'

/**
 * A charter sent apart between real hosts on 127.0.0.1, over the rpc channel and its 1 MiB frame
 * (docs/protocol.md, "The arbiter committee"): the first list page names the charter's digest, and
 * `arbiters.charter` answers its registrations one by one.
 */
describe('p2p: an arbiter charter too heavy for the first list page, fetched apart', function () {
  this.timeout(120_000)
  let hosts: P2pHost[]
  let rpcs: Array<Rpc<ArbiterMethods & BuiltinMethods>>
  /** the committee each host serves */
  const served: Array<ArbiterCommittee | undefined> = [undefined, undefined]
  const calls: string[] = []

  before(async () => {
    hosts = await startHosts(2)
    await connect(hosts[0]!, hosts[1]!)
    rpcs = []
    for (let i = 0; i < 2; i++) {
      const rpc = createRpc<ArbiterMethods>({ host: hosts[i]!, handlers: arbiterRpcHandlers(() => served[i]) })
      await rpc.start()
      rpcs.push(rpc)
    }
  })
  after(async () => { await stopAll([...hosts, ...rpcs]) })

  const client = (i: number): RpcClient<never> => ({
    call: async (peer: string, method: keyof ArbiterMethods, req: never, o?: never) => { calls.push(method); return await rpcs[i]!.call(peer, method, req, o) }
  }) as unknown as RpcClient<never>

  it('a charter of 4 registrations of ~300 KB each (past a frame): a pull of its holder goes through, and the puller fetches all 4 registrations, which hash to the digest listed', async () => {
    // ids drawn from " 0".." 3", each token's chain one block of 300 000 hex characters
    const charter = [0, 1, 2, 3].map((i) => junkReg(` ${i}`, 900_000_000 + i, 300_000))
    const col = memoryCollection<any>() // eslint-disable-line @typescript-eslint/no-explicit-any
    await col.put('~charter', { regs: charter })
    const net = (await fourSeats(() => 1_000_000_000)).last.ctx.net
    const holder = committeeOf(net, { col, now: () => 1_000_000_000 })
    await holder.load()
    expect(holder.charterView()?.dids).to.have.length(4)
    served[0] = holder
    const puller = committeeOf(net, { now: () => 1_000_000_000, rpc: client(1) })
    served[1] = puller
    calls.length = 0
    // before: the first page (~1.2 MB) was refused by the frame, and the pull threw
    await puller.pullFrom(hosts[0]!.peerId)
    expect(calls.filter((m) => m === 'arbiters.charter'), 'the charter fetched apart').to.have.length(4)
    // fetched whole and matching its digest: refused only by its (made-up) signatures
    expect(await puller.receiveCharterApart(holder.heldCharter()!.digest, hosts[0]!.peerId)).to.match(/signature does not verify/)
    expect(puller.charterView()).to.equal(undefined)
  })

  it('a real charter listed apart is pulled, over the frame, by a node that never saw its seats: the same charter, in force', async () => {
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const n = last.ctx.net
    const holder = committeeOf(n, { now, maturityMs: MATURITY, charterInlineBytes: 1 })
    for (const w of wires) expect(await holder.receive(w, w.reg.peer)).to.equal(undefined)
    served[0] = holder
    const puller = committeeOf(n, { now, maturityMs: MATURITY, rpc: client(1) })
    served[1] = puller
    calls.length = 0
    await puller.pullFrom(hosts[0]!.peerId)
    expect(calls.filter((m) => m === 'arbiters.charter')).to.have.length(4)
    expect(puller.charterView()?.dids).to.deep.equal(holder.charterView()?.dids)
    clock = Math.max(...wires.map((w) => w.reg.at)) + MATURITY
    expect(puller.inForce()).to.equal(true)
    expect(puller.seats()).to.deep.equal(holder.seats())
  })
})
