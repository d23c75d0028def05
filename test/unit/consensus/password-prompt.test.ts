import { expect } from 'chai'
import { SimNet, balance } from './harness.js'
import { createDid, didDocumentOf } from '../../../src/wallet/create-did.js'
import { DidSigner, QuorumSigner, type SignPrompt } from '../../../src/wallet/did-crypto.js'
import { ownerSigner, quorumSigner } from '../../../src/consensus/wallet-adapters.js'
import { TwoStepEngine } from '../../../src/node/signing/two-step.js'
import { ok, type Envelope, type PendingSignature } from '../../../src/api/contract/envelope.js'
import { TransferSender } from '../../../src/consensus/sender.js'
import type { ConsensusSigner } from '../../../src/consensus/ports.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'

/** `p`, or 'hung' when it has not settled within `ms` */
async function within<T> (p: Promise<T>, ms: number): Promise<T | 'hung'> {
  let timer: NodeJS.Timeout | undefined
  const t = new Promise<'hung'>((resolve) => { timer = setTimeout(() => resolve('hung'), ms) })
  try { return await Promise.race([p, t]) } finally { clearTimeout(timer) }
}

describe('consensus: a password prompt left open blocks no other operation of the DID', function () {
  this.timeout(60_000)

  it('a second transfer answers its first step at once while the first waits for its password, and both complete', async () => {
    const { net, a, bob, b } = await SimNet.standard()
    const created = await createDid({ type: 4, password: 'pw' })
    const doc = didDocumentOf(created)
    const local = { doc, pvtKey: created.privateFiles['pvtKey.pem'] }
    const auto: SignPrompt = async () => ({ password: 'pw' })
    a.dids.set(doc.did, { did: doc.did, doc, owner: ownerSigner(new DidSigner(local, auto)), quorum: quorumSigner(await QuorumSigner.open(local, { privatePassword: 'pw' })) })
    net.docs.set(doc.did, doc)
    await net.mint(a, doc.did, 2)
    const engine = new TwoStepEngine({ sweepIntervalMs: 0 })
    try {
      const start = async (): Promise<Envelope<unknown>> => await engine.start(doc.did, doc.type, async (prompt) => {
        const r = await a.sender.transfer({ sender: doc.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, ownerSigner(new DidSigner(local, prompt)))
        return ok('done', r)
      }, 'transfer')
      const first = await within(start(), 5000)
      expect(first).to.not.equal('hung')
      const id1 = ((first as Envelope<PendingSignature>).result as PendingSignature).id
      // the first is left waiting; the second answers at once all the same (it used to wait for the DID's lock)
      const second = await within(start(), 5000)
      expect(second, 'second transfer first step').to.not.equal('hung')
      const id2 = ((second as Envelope<PendingSignature>).result as PendingSignature).id
      expect(id2).to.not.equal(id1)
      expect(engine.waitingFor(doc.did)?.id).to.be.oneOf([id1, id2])
      const done2 = await engine.complete(id2, { password: 'pw' })
      expect(done2.status).to.equal(true)
      expect(await balance(b, bob.did)).to.equal(1000)
      // the first, answered at last, chooses from what is left
      const done1 = await engine.complete(id1, { password: 'pw' })
      expect(done1.status).to.equal(true)
      expect(await balance(b, bob.did)).to.equal(2000)
    } finally { engine.stop() }
  })

  it('an operation that must wait behind one parked on a prompt is refused at once, naming it, its seconds left and how to cancel it', async () => {
    const { net, a, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    // a signer whose signatures come from outside: the first transfer parks on its first signature
    let release: (() => void) | undefined
    const parked = new Promise<void>((resolve) => { release = resolve })
    let asked = false
    const external: ConsensusSigner = {
      did: alice.did,
      signHash: async (h) => { asked = true; await parked; return await alice.owner.signHash(h) },
      pvtSign: async (m) => { asked = true; await parked; return await alice.owner.pvtSign(m) }
    }
    const old = a.sender as unknown as { opts: ConstructorParameters<typeof TransferSender>[0] }
    const sender = new TransferSender({ ...old.opts, waitingFor: (did) => did === alice.did && asked ? { id: 'req-1', secondsLeft: 170, kind: 'signature' } : undefined })
    const first = sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 500, memo: '', quorums: net.quorumDids }, external)
    const deadline = Date.now() + 5000
    while (!asked && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve))
    expect(asked).to.equal(true)
    // the same DID signs externally for the second transfer too (its key is not on the node)
    const alsoExternal: ConsensusSigner = { did: alice.did, signHash: alice.owner.signHash, pvtSign: alice.owner.pvtSign }
    const second = await within(sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 500, memo: '', quorums: net.quorumDids }, alsoExternal).then(() => 'ok', (e: unknown) => e), 5000)
    expect(second).to.be.instanceOf(RbtError)
    expect((second as RbtError).code).to.equal(ErrorCode.CONFLICT)
    expect((second as RbtError).message).to.match(/request req-1\) waits for its signature, 170 s left/)
    expect((second as RbtError).message).to.match(/"cancel":true/)
    release!()
    expect((await first).delivered).to.equal(true)
  })

  it('a waiting operation can be cancelled: it ends as an expired one, and its id says so', async () => {
    const engine = new TwoStepEngine({ sweepIntervalMs: 0 })
    const did = 'bafybmi' + 'q'.repeat(52)
    try {
      const env = await engine.start(did, 4, async (prompt) => { await prompt({ did, mode: 4, kind: 'password', hash: null, onlyPrivKey: false }); return ok('never', null) })
      const id = (env.result as PendingSignature).id
      expect(engine.waitingFor(did)?.id).to.equal(id)
      engine.cancel(id)
      expect(engine.waitingFor(did)).to.equal(undefined)
      await engine.complete(id, { password: 'x' }).then(() => expect.fail('completed'), (e: RbtError) => expect(e.code).to.equal(ErrorCode.EXPIRED))
      expect(() => { engine.cancel(id) }).to.throw(/already expired/)
    } finally { engine.stop() }
  })
})
