import { expect } from 'chai'
import { readFile } from 'node:fs/promises'
import { decodeBlockEnvelope } from '../../../src/tokenchain/block.js'
import { cidV0ForContent, smartContractDescriptor, smartContractTokenId } from '../../../src/tokenchain/token-id.js'
import { validateChain } from '../../../src/tokenchain/validate.js'
import { didSignatureVerifier } from '../../../src/tokens/verifier.js'
import type { NftOp } from '../../../src/consensus/nft.js'
import { SC_TOKEN_TYPE, computeScRecord, encodeScRecord, latestScState, parseScRecord } from '../../../src/consensus/smart-contract.js'
import { exampleContract } from '../../../src/contracts/build-examples.js'
import type { SimDid, SimNet, SimNode } from './harness.js'
import { SimNet as Net } from './harness.js'

async function generated (net: SimNet, n: SimNode, d: SimDid, binary: Uint8Array): Promise<string> {
  const sources = { binaryCodeHash: cidV0ForContent(binary), rawCodeHash: cidV0ForContent('src'), schemaCodeHash: '', did: d.did }
  const id = smartContractTokenId(sources)
  net.scCode.set(id, { descriptor: smartContractDescriptor(sources), binary })
  await n.ledger.commit((w) => { w.putToken({ tokenId: id, tokenType: SC_TOKEN_TYPE, valueMilli: 0, owner: d.did, status: 'Generated', latestBlockId: '', updatedAt: 1 }) })
  return id
}

async function call (net: SimNet, n: SimNode, id: string, data: string, op: 'deploy' | 'execute'): Promise<NftOp> {
  const chain = await n.ledger.chain(id)
  const t = await n.ledger.token(id)
  const r = await computeScRecord(net.engine, net.scCode.get(id)!.binary, latestScState(chain), data)
  if ('error' in r) throw new Error(r.error)
  return { op, nftId: id, valueMilli: op === 'deploy' ? 1000 : t!.valueMilli, data, sc: { record: r.record, base: t?.latestBlockId ?? '' } }
}

describe('consensus: smart contracts (simulated nodes, real signatures, quorums run the contract)', function () {
  this.timeout(120_000)
  let counter: Uint8Array
  before(async () => { counter = new Uint8Array(await readFile((await exampleContract('counter')).wasm)) })

  it('deploys ("09") and executes ("10") from two nodes; every quorum reproduced the state; the chain validates', async () => {
    const { net, a, b, alice, bob } = await Net.standard()
    const q = net.quorumDids
    const id = await generated(net, a, alice, counter)
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: await call(net, a, id, '', 'deploy'), memo: '', quorums: q }, alice.owner)
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: await call(net, a, id, '{"increment": 4}', 'execute'), memo: '', quorums: q }, alice.owner)
    // B holds the chain (as a subscriber would) and executes as bob
    const chain = await a.ledger.chain(id)
    const tip = (await a.ledger.token(id))!
    await b.ledger.commit((w) => {
      chain.forEach((env, i) => { w.putBlock(id, i, env) })
      w.putToken({ ...tip, status: 'Transferred' })
    })
    await b.sender.nft({ initiator: bob.did, receiver: bob.did, op: await call(net, b, id, '{"increment": 3}', 'execute'), memo: '', quorums: q }, bob.owner)
    const final = await b.ledger.chain(id)
    expect(final.map((env) => parseScRecord(decodeBlockEnvelope(env).content.smartContractData)?.state)).to.deep.equal(['0', '4', '7'])
    expect(final.map((env) => decodeBlockEnvelope(env).content.transactionType)).to.deep.equal(['09', '10', '10'])
    const verifier = didSignatureVerifier({ resolve: async (d) => net.docs.get(d) })
    const res = await validateChain(final, { tokenId: id, verifier })
    expect(res.length).to.equal(3)
    expect((await b.ledger.token(id))?.status).to.equal('Free')
  })

  it('quorums vote no on a state they cannot reproduce, and on code that does not match the id; nothing changes', async () => {
    const { net, a, alice } = await Net.standard()
    const q = net.quorumDids
    const id = await generated(net, a, alice, counter)
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: await call(net, a, id, '', 'deploy'), memo: '', quorums: q }, alice.owner)
    const before = await a.ledger.chain(id)
    const honest = await call(net, a, id, '{"increment": 1}', 'execute')
    const forged: NftOp = { ...honest, sc: { ...honest.sc!, record: encodeScRecord('{"increment": 1}', '1000', '{"count":1000}') } }
    try {
      await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: forged, memo: '', quorums: q }, alice.owner)
      expect.fail('a forged state was recorded')
    } catch (e) { expect((e as Error).message).to.match(/consensus failed.*determinism check failed/) }
    expect(await a.ledger.chain(id)).to.deep.equal(before)
    expect((await a.ledger.token(id))?.status).to.equal('Free')
    // code that is not the contract's
    const good = net.scCode.get(id)!
    net.scCode.set(id, { ...good, binary: new Uint8Array([...good.binary, 0]) })
    try {
      await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: honest, memo: '', quorums: q }, alice.owner)
      expect.fail('foreign code was accepted')
    } catch (e) { expect((e as Error).message).to.match(/binary does not match/) }
    net.scCode.set(id, good)
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: honest, memo: '', quorums: q }, alice.owner)
    expect(latestScState(await a.ledger.chain(id))).to.equal('1')
  })
})
