import { expect } from 'chai'
import { fileURLToPath } from 'node:url'
import { KuboDaemon, requireKubo } from './kubo.js'
import { createNetns, type Netns } from './netns.js'
import { waitFor } from './wait.js'

const TEST_KEY = fileURLToPath(new URL('../../../swarm-keys/testswarm.key', import.meta.url))

describe('test helper: Kubo daemons in a network namespace', function () {
  this.timeout(180_000)
  let ns: Netns | undefined
  const daemons: KuboDaemon[] = []

  before(async function () {
    await requireKubo(this)
    ns = await createNetns('kubo-helper')
  })

  after(async () => {
    for (const d of daemons) await d.stop().catch(() => {})
    await ns?.dispose()
  })

  it('starts two daemons configured as the reference does, and the second bootstraps to the first', async () => {
    const a = await new KuboDaemon({ netns: ns!, swarmKey: TEST_KEY }).start()
    daemons.push(a)
    expect(JSON.parse(await a.ipfs(['config', 'Experimental.Libp2pStreamMounting']))).to.equal(true)
    expect((await a.ipfs(['config', 'Routing.Type'])).trim()).to.equal('dhtserver')
    const b = await new KuboDaemon({ netns: ns!, swarmKey: TEST_KEY, bootstrap: [a.multiaddr] }).start()
    daemons.push(b)
    expect((await b.ipfs(['bootstrap', 'list'])).trim()).to.equal(a.multiaddr)
    await waitFor(async () => (await a.swarmPeers()).includes(b.peerId), { timeoutMs: 30_000, what: 'a sees b' })
  })
})
