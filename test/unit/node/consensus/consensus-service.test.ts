import { expect } from 'chai'
import { ConsensusService, type ConsensusServiceOptions } from '../../../../src/node/consensus/consensus-service.js'
import { Faucet } from '../../../../src/node/consensus/faucet.js'
import type { TransferResult } from '../../../../src/consensus/sender.js'
import { ErrorCode, isRbtError } from '../../../../src/util/errors.js'
import { silentLogger } from '../../../../src/util/logger.js'

const ASKER = 'bafybmi' + 'a'.repeat(52)
const FAUCET = 'bafybmi' + 'f'.repeat(52)
const TX = 'ab'.repeat(32)

/** A consensus service whose sender answers `result` (the consensus rounds are not what is tested here). */
function service (result: Omit<TransferResult, 'txid'>): ConsensusService {
  const unused = undefined as never
  const svc = new ConsensusService({
    ledger: unused,
    verifier: unused,
    transport: unused,
    identity: { signerFor: async () => ({ doc: { did: FAUCET }, pvtSign: async () => new Uint8Array(64) }) } as never,
    registry: { list: () => [] } as never,
    selfPeer: () => 'self',
    log: silentLogger
  } as ConsensusServiceOptions)
  ;(svc as unknown as { sender: { transfer: () => Promise<TransferResult> } }).sender = { transfer: async () => ({ txid: TX, ...result }) }
  return svc
}

async function code (p: Promise<unknown>): Promise<string | undefined> {
  return await p.then(() => undefined, (e) => { expect(isRbtError(e), String(e)).to.equal(true); return (e as { code: string }).code })
}

describe('node: the consensus service reports a transfer done only when the receiver holds the tokens', () => {
  const prompt = async (): Promise<{ password: string }> => ({ password: 'x' })

  it('a decided transfer not yet delivered is DELIVERY_PENDING naming the transaction; a delivered one succeeds', async () => {
    const pending = service({ blockId: 'b', quorums: [], delivered: false })
    const err = await pending.transfer({ initiator: FAUCET, owner: ASKER, amountMilli: 1000, memo: '' }, prompt).then(() => undefined, (e: unknown) => e)
    expect(isRbtError(err, ErrorCode.DELIVERY_PENDING)).to.equal(true)
    expect((err as { details: unknown }).details).to.deep.equal({ transactionID: TX })
    expect(await code(pending.selfTransfer(FAUCET, ['QmT'], 1000, prompt))).to.equal(ErrorCode.DELIVERY_PENDING)
    const done = await service({ blockId: 'b', quorums: [], delivered: true }).transfer({ initiator: FAUCET, owner: ASKER, amountMilli: 1000, memo: '' }, prompt)
    expect(done.txid).to.equal(TX)
  })

  it("the faucet's transfer gets the same rule: no success while the asker does not hold the tokens", async () => {
    const faucet = (svc: ConsensusService): Faucet => new Faucet({
      identity: { signerFor: async () => ({ pvtSign: async () => new Uint8Array(64) }), create: async () => ({ did: FAUCET }) } as never,
      tokens: { mintLocalRbt: async () => ({}) } as never,
      registry: { sealText: (_: string, t: string) => t, unsealText: (_: string, t: string) => t } as never,
      config: { data: { settings: { faucet: { did: FAUCET, sealed: 'pw' } } }, update: async () => {} } as never,
      consensus: () => svc,
      log: silentLogger
    })
    expect(await code(faucet(service({ blockId: 'b', quorums: [], delivered: false })).serve(ASKER, 2))).to.equal(ErrorCode.DELIVERY_PENDING)
    expect(await faucet(service({ blockId: 'b', quorums: [], delivered: true })).serve(ASKER, 2)).to.deep.equal({ txid: TX, count: 2 })
  })
})

describe('node: the consensus service starts without waiting for the transfers it recovers', () => {
  it('start() returns while the recovery of open transfers still waits on the network; the sweep does not run beside it', async () => {
    const svc = service({ blockId: 'b', quorums: [], delivered: true })
    ;(svc as unknown as { opts: { registry: unknown, sweepIntervalMs: number } }).opts.registry = { list: () => [], loadSetups: async () => [] }
    ;(svc as unknown as { opts: { sweepIntervalMs: number } }).opts.sweepIntervalMs = 0
    let release!: () => void
    const calls: string[] = []
    ;(svc as unknown as { sender: unknown }).sender = {
      recover: async (o?: { staleMs?: number }) => {
        calls.push(o?.staleMs === undefined ? 'start' : 'sweep')
        if (o?.staleMs === undefined) await new Promise<void>((resolve) => { release = resolve })
      }
    }
    ;(svc as unknown as { quorum: unknown }).quorum = { sweep: async () => { calls.push('quorum sweep') } }
    await svc.start()
    let settled = false
    void svc.recovered.then(() => { settled = true })
    await svc.sweep()
    expect(calls).to.deep.equal(['start'])
    expect(settled).to.equal(false)
    release()
    await svc.recovered
    await svc.sweep()
    expect(calls).to.deep.equal(['start', 'sweep', 'quorum sweep'])
    svc.stop()
  })
})

describe('node: saved quorum setups are opened beside the start', () => {
  type Signers = { quorum: { signHash: (h: string) => Promise<{ keySig: string }> } }
  const withSetups = (svc: ConsensusService, dids: string[], open: (did: string) => Promise<unknown>): void => {
    const o = svc as unknown as { opts: Record<string, unknown>, openSigners: unknown, sender: unknown }
    o.opts.registry = { list: () => [], loadSetups: async () => dids.map((did) => ({ did, password: 'p', privPassword: 'q' })) }
    o.opts.sweepIntervalMs = 0
    o.sender = { recover: async () => {} }
    o.openSigners = open
  }
  const signersOf = (svc: ConsensusService, did: string): Signers | undefined => (svc as unknown as { quorumSigners: Map<string, Signers> }).quorumSigners.get(did)

  it('start() returns before the keys are open; a signature asked meanwhile waits for them; a setup that fails to open is dropped', async () => {
    const svc = service({ blockId: 'b', quorums: [], delivered: true })
    const GOOD = 'bafybmi' + 'g'.repeat(52)
    const BAD = 'bafybmi' + 'h'.repeat(52)
    let openGood!: () => void
    let failBad!: (e: Error) => void
    const signer = { did: GOOD, signHash: async (h: string) => ({ keySig: `sig(${h})`, shareSig: '', signType: 0 as const }), pvtSign: async () => '' }
    withSetups(svc, [GOOD, BAD], async (did) => await new Promise((resolve, reject) => {
      if (did === GOOD) openGood = () => { resolve({ quorum: signer, owner: signer }) }
      else failBad = reject
    }))
    await svc.start()
    // both are set up as far as the quorum service can tell, and nothing is open yet
    expect(signersOf(svc, GOOD)).to.not.equal(undefined)
    expect(signersOf(svc, BAD)).to.not.equal(undefined)
    let signed: string | undefined
    const asked = signersOf(svc, GOOD)!.quorum.signHash('ab').then((s) => { signed = s.keySig })
    const badAsked = signersOf(svc, BAD)!.quorum.signHash('ab').then(() => 'signed', (e: Error) => e.message)
    await new Promise((resolve) => setImmediate(resolve))
    expect(signed).to.equal(undefined)
    openGood()
    failBad(new Error('wrong password'))
    await asked
    expect(signed).to.equal('sig(ab)')
    expect(await badAsked).to.equal('wrong password')
    await svc.opened
    expect(signersOf(svc, BAD)).to.equal(undefined)
    expect(signersOf(svc, GOOD)!.quorum).to.equal(signer)
    svc.stop()
  })
})
