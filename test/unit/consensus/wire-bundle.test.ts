import { expect } from 'chai'
import { compressBundle, consensusRpcHandlers, packBundle, packDeliver, squeeze, unpackBundle } from '../../../src/node/consensus/consensus-network.js'
import type { ConsensusService } from '../../../src/node/consensus/consensus-service.js'
import type { ChainBundle, DeliverRequest } from '../../../src/consensus/messages.js'
import { createBlock, createContract, encodeBlockEnvelope, encodeContractEnvelope, genesisEntry, ContractType, PledgeMode, TransactionType, TokenType } from '../../../src/tokenchain/index.js'
import { isRbtError } from '../../../src/util/errors.js'

const bytes = (...b: number[]): Uint8Array => new Uint8Array(b)
const DID = 'bafybmi' + 'a'.repeat(52)
const TXID = 'ab'.repeat(32)

/** Sends through JSON like the rpc layer: byte strings as base64, so every array arrives as its own copy. */
function overTheWire<T> (v: T): T {
  const text = JSON.stringify(v, (_k, x: unknown) => x instanceof Uint8Array ? { $b64: Buffer.from(x).toString('base64') } : x)
  return JSON.parse(text, (_k, x: unknown) => (x !== null && typeof x === 'object' && '$b64' in x) ? new Uint8Array(Buffer.from((x as { $b64: string }).$b64, 'base64')) : x) as T
}

describe('consensus wire: bundles with shared blocks', () => {
  it('sends a block shared by many chains once and gives every chain the same array back', () => {
    const shared = bytes(1, 2, 3)
    const bundle: ChainBundle = { chains: { a: [bytes(9), shared], b: [bytes(8), shared], c: [shared] }, contents: { a: 'x' } }
    const packed = overTheWire(packBundle(bundle))
    expect((packed as { blocks?: unknown[] }).blocks).to.have.length(3)
    const back = unpackBundle(packed)
    expect(Object.keys(back.chains).sort()).to.deep.equal(['a', 'b', 'c'])
    expect(back.chains.a![1]).to.equal(back.chains.c![0]) // one array, so it is decoded once
    expect([...back.chains.b![0]!]).to.deep.equal([8])
    expect(back.contents).to.deep.equal({ a: 'x' })
    // a plain bundle passes through unchanged
    expect(unpackBundle(bundle)).to.equal(bundle)
  })

  it('large bundles travel compressed and come back byte for byte', () => {
    const big = new Uint8Array(200_000).map((_x, i) => i % 7)
    const small = bytes(5)
    const bundle: ChainBundle = { chains: { a: [small, big], b: [big] }, contents: {} }
    const wire = overTheWire(compressBundle(packBundle(bundle)))
    expect((wire as { blocks?: unknown }).blocks).to.equal(undefined)
    expect((wire as unknown as { blocksZ: Uint8Array }).blocksZ.length).to.be.below(20_000)
    const back = unpackBundle(wire)
    expect(back.chains.a![1]).to.equal(back.chains.b![0])
    expect(Buffer.from(back.chains.b![0]!).equals(Buffer.from(big))).to.equal(true)
    expect([...back.chains.a![0]!]).to.deep.equal([5])
    // a small bundle is left as it is
    expect((compressBundle(packBundle({ chains: { a: [small] }, contents: {} })) as { blocks?: unknown }).blocks).to.have.length(1)
    // garbage instead of a gzip stream is refused
    try { unpackBundle({ chains: {}, contents: {}, refs: {}, blocksZ: bytes(1, 2, 3) } as unknown as ChainBundle); expect.fail('accepted') } catch (e) { expect((e as Error).message).to.match(/does not inflate/) }
  })

  it('a large block to sign arrives compressed and is handed on whole', async () => {
    const block = new Uint8Array(300_000).map((_x, i) => i % 11)
    let seen: Uint8Array | undefined
    const svc = { quorum: { sign: async (r: { block: Uint8Array }) => { seen = r.block; return { quorumDid: DID, signature: 'ab' } } } } as unknown as ConsensusService
    const { gzipSync } = await import('node:zlib')
    const wire = overTheWire({ txid: TXID, quorumDid: DID, block: new Uint8Array(0), blockZ: new Uint8Array(gzipSync(block)) })
    await consensusRpcHandlers(() => svc)['cs.sign'](wire as never, { peerId: 'p' } as never)
    expect(Buffer.from(seen!).equals(Buffer.from(block))).to.equal(true)
  })

  it('a large block sent to several quorums is compressed once', () => {
    const block = new Uint8Array(300_000).map((_x, i) => i % 13)
    const one = squeeze({ txid: TXID, quorumDid: DID, block }, 'block') as { blockZ?: Uint8Array }
    const two = squeeze({ txid: TXID, quorumDid: DID, block }, 'block') as { blockZ?: Uint8Array }
    expect(one.blockZ).to.be.instanceOf(Uint8Array)
    // before: a gzip of the same bytes for every quorum asked to sign, and again for every FINALIZE
    expect(two.blockZ).to.equal(one.blockZ)
  })

  it('refuses references outside the block list', () => {
    const bad = { chains: {}, contents: {}, blocks: [bytes(1)], refs: { a: [0, 1] } } as unknown as ChainBundle
    try { unpackBundle(bad); expect.fail('accepted') } catch (e) { expect(isRbtError(e) && (e as Error).message).to.match(/bundle refs/) }
  })

  it('a delivery sends the new block and its contract once, inside the bundle', async () => {
    const contract = encodeContractEnvelope(createContract({ type: ContractType.FT, pledgeMode: PledgeMode.PERIODIC, transInfo: { sender: DID, receiver: DID, transTokens: {} }, totalRbts: 1 }))
    const block = encodeBlockEnvelope(createBlock({
      transactionType: TransactionType.TRANSFERRED, owner: DID, transInfo: { tid: TXID, tokens: { Qm1: genesisEntry(TokenType.FT) } }, smartContract: contract, childTokens: []
    }))
    const req: DeliverRequest = { txid: TXID, receiver: DID, contract, block, bundle: { chains: { Qm1: [bytes(7), block] }, contents: {} }, memo: 'm', epoch: 1 }
    let seen: DeliverRequest | undefined
    const svc = { learnInitiator: async () => {}, receiver: { deliver: async (r: DeliverRequest) => { seen = r; return { txid: r.txid, accepted: true as const } } } } as unknown as ConsensusService
    const handlers = consensusRpcHandlers(() => svc)
    // what the transport sends, crossing JSON like on the wire
    const wire = overTheWire(packDeliver(req))
    expect(wire.block.length).to.equal(0)
    expect(wire.contract.length).to.equal(0)
    await handlers['cs.deliver'](wire as never, { peerId: 'p' } as never)
    expect([...seen!.block]).to.deep.equal([...block])
    expect([...seen!.contract]).to.deep.equal([...contract])
    expect(seen!.bundle.chains.Qm1![1]).to.equal(seen!.block)
  })

  it('a delivery of tokens sent without their chains goes compressed to a receiver that reads it, with the contract taken from the block', async () => {
    // 400 parts: the block and the contract it embeds come to about 300 KB, over the 256 KB a request may take on a peer's channel
    const transTokens: Record<string, { tokenType: number, tokenValue: number, owner: string, blockId: string }> = {}
    const tokens: Record<string, { tokenType: number, blockNumber: string, previousBlockId: string }> = {}
    for (let i = 0; i < 400; i++) {
      const id = `Qm${String(i).padStart(44, 'x')}`
      const blockId = `${i + 1}-${(i % 256).toString(16).padStart(2, '0').repeat(32)}`
      transTokens[id] = { tokenType: TokenType.PART, tokenValue: 0.001, owner: DID, blockId }
      tokens[id] = { tokenType: TokenType.PART, blockNumber: String(i + 2), previousBlockId: blockId }
    }
    const contract = encodeContractEnvelope(createContract({ type: ContractType.RBT_DIRECT, pledgeMode: PledgeMode.PERIODIC, transInfo: { sender: DID, receiver: DID, transTokens }, totalRbts: 0.4 }))
    const block = encodeBlockEnvelope(createBlock({ transactionType: TransactionType.TRANSFERRED, owner: DID, transInfo: { tid: TXID, tokens }, smartContract: contract, childTokens: [] }))
    const req: DeliverRequest = { txid: TXID, receiver: DID, contract, block, bundle: { chains: {}, contents: {} }, memo: 'm', epoch: 1 }
    let seen: DeliverRequest | undefined
    const svc = { learnInitiator: async () => {}, hosts: async () => true, receiver: { policy: async () => ({}), deliver: async (r: DeliverRequest) => { seen = r; return { txid: r.txid, accepted: true as const } } } } as unknown as ConsensusService
    const handlers = consensusRpcHandlers(() => svc)
    const size = (v: unknown): number => JSON.stringify(v, (_k, x: unknown) => x instanceof Uint8Array ? Buffer.from(x).toString('base64') : x).length
    // a receiver's node that did not say it reads compressed deliveries (an older one) gets them as before
    const plain = packDeliver(req)
    expect(plain.block).to.equal(block)
    expect(plain.contract).to.equal(contract)
    expect(size(plain)).to.be.greaterThan(256 * 1024)
    // one that did (its probe answer) gets the block compressed and the contract as the block's own
    expect((await handlers['cs.probe']({ did: DID } as never, { peerId: 'p' } as never) as { deliverZ?: boolean }).deliverZ).to.equal(true)
    const wire = overTheWire(packDeliver(req, true))
    expect(wire.block.length).to.equal(0)
    expect(wire.contract.length).to.equal(0)
    expect(size(wire)).to.be.lessThan(128 * 1024)
    await handlers['cs.deliver'](wire as never, { peerId: 'p' } as never)
    expect([...seen!.block]).to.deep.equal([...block])
    expect([...seen!.contract]).to.deep.equal([...contract])
    expect((seen as unknown as Record<string, unknown>).contractInBlock).to.equal(undefined)
  })
})
