import '../../src/util/polyfill.js'
import { RbtError } from '../../src/util/errors.js'
import { expect } from 'chai'
import { createP2pHost, type P2pHost, type P2pHostOptions } from '../../src/p2p/host.js'
import { defaultSwarmKeyPath, loadSwarmKeySync, type SwarmKey } from '../../src/p2p/swarm-key.js'

export const testSwarmKey: SwarmKey = loadSwarmKeySync(defaultSwarmKeyPath(true))

/** Create and start `n` hosts on 127.0.0.1 ephemeral ports with the test-net key. */
export async function startHosts (n: number, opts: Partial<P2pHostOptions> = {}): Promise<P2pHost[]> {
  const hosts: P2pHost[] = []
  for (let i = 0; i < n; i++) {
    const h = await createP2pHost({ swarmKey: testSwarmKey, listen: ['/ip4/127.0.0.1/tcp/0'], gossip: { heartbeatIntervalMs: 100 }, ...opts })
    await h.start()
    hosts.push(h)
  }
  return hosts
}

export async function stopAll (items: Array<{ stop: () => Promise<void> } | undefined>): Promise<void> {
  for (const it of [...items].reverse()) {
    if (it !== undefined) await it.stop().catch(() => {})
  }
}

/** Poll `cond` every `intervalMs` until it holds; fail with `what` after `timeoutMs`. */
export async function waitFor (what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 5000, intervalMs = 20): Promise<void> {
  const until = Date.now() + timeoutMs
  for (;;) {
    if (await cond()) return
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise(resolve => setTimeout(resolve, intervalMs))
  }
}

/**
 * Connect a to b and wait until identify has run on both sides (protocols known). A dial that
 * times out is tried twice more: with a dozen hosts in one process on a loaded machine, a pnet
 * handshake once took longer than the dial's 5 s (the suites that test dials call `dial` itself).
 */
export async function connect (a: P2pHost, b: P2pHost): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await a.dial(b.multiaddrs()[0])
      break
    } catch (e) {
      if (attempt >= 3) throw e
    }
  }
  await waitFor(`${a.peerId} <-> ${b.peerId}`, () => a.isConnected(b.peerId) && b.isConnected(a.peerId))
}

/** Awaits `p` and expects it to fail with an RbtError of `code`; returns that error. */
export async function expectRbtError (p: Promise<unknown>, code: string): Promise<RbtError> {
  try {
    await p
  } catch (e) {
    expect(e, String(e)).to.be.instanceOf(RbtError)
    expect((e as RbtError).code, (e as RbtError).message).to.equal(code)
    return e as RbtError
  }
  return expect.fail(`expected ${code}`)
}
