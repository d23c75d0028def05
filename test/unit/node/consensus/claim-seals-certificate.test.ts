import { expect } from 'chai'
import { nonceOfSecret, type PeerSeal } from '../../../../src/consensus/claim-proofs.js'
import type { PrepareReply } from '../../../../src/consensus/messages.js'
import type { Ledger } from '../../../../src/consensus/ports.js'
import { SenderClaims, asRegrowth } from '../../../../src/consensus/sender-claims.js'
import type { RpcClient } from '../../../../src/p2p/rpc.js'
import { blockIdFor, createBlock, encodeBlockEnvelope, setSignature, testTokenGenesis } from '../../../../src/tokenchain/block.js'
import { createContract, encodeContractEnvelope, transactionId, withContractSignature } from '../../../../src/tokenchain/contract.js'
import { tokenStateHash } from '../../../../src/tokenchain/token-id.js'
import { ContractType, PledgeMode } from '../../../../src/tokenchain/types.js'
import { GENESIS_ANCHOR } from '../../../../src/tokenchain/validate.js'
import { silentLogger } from '../../../../src/util/logger.js'
import { claimsAt, peerKey, seatsOf } from './committee-fixture.js'

type Vote = Extract<PrepareReply, { vote: 'yes' }>

/**
 * The certificate of a transfer decided on its signers' own seals (docs/protocol.md, "A signer's
 * own seal"): the seats that are not among the signers seal it after the decision, so that a
 * receiver counting a seat more than the sender (a registration matured there first) still finds
 * q(n) seals. When the claim round was skipped too ("Grants in the votes"), those seats held no
 * record of the transaction and sealed nothing: the certificate stayed at the five signers' seals.
 */
describe('claims: the certificate of a transfer decided on its signers\' seals', () => {
  const ALICE = 'bafybmialice'
  const TOKEN = 'b'.repeat(64)
  const GENESIS = (() => { const b = createBlock(testTokenGenesis({ tokenId: TOKEN, owner: ALICE })); return setSignature(b, ALICE, 'ab') })()
  const BLOCK = blockIdFor(GENESIS, TOKEN)
  const c = createContract({ type: ContractType.RBT_DIRECT, pledgeMode: PledgeMode.PERIODIC, transInfo: { sender: ALICE, receiver: 'bafybmibob', transTokens: { [TOKEN]: { tokenType: 0, tokenValue: 1, owner: ALICE, blockId: BLOCK } } }, totalRbts: 1 })
  const contract = encodeContractEnvelope(withContractSignature(c, ALICE, 'ab'))
  const txid = transactionId(contract)
  const state = `${TOKEN}@${GENESIS_ANCHOR}`
  const STATE = tokenStateHash(TOKEN, GENESIS_ANCHOR)
  const quorums = ['bafybmiqa', 'bafybmiqb', 'bafybmiqc', 'bafybmiqd', 'bafybmiqe']
  const secrets = quorums.map((_, i) => (0xe0 + i).toString(16).padStart(32, '0'))
  const ledger = { chain: async (id: string) => id === TOKEN ? [encodeBlockEnvelope(GENESIS)] : undefined } as unknown as Ledger

  /** Seven seats, q(7) = 5, reached over an rpc that records every request (method and peer); the five signers' nodes are seats 0..4. */
  async function sevenSeats (): Promise<{ keys: Array<Awaited<ReturnType<typeof peerKey>>>, committee: () => string[], asked: string[], rpc: RpcClient<never>, seats: Array<ReturnType<typeof claimsAt>> }> {
    const keys = await Promise.all(Array.from({ length: 7 }, async () => await peerKey()))
    const committee = (): string[] => keys.map((k) => k.peer)
    const byPeer = new Map<string, ReturnType<typeof claimsAt>>()
    const asked: string[] = []
    const rpc = {
      call: async (peer: string, method: string, req: never) => {
        asked.push(`${method} ${peer}`)
        const at = byPeer.get(peer)
        if (at === undefined) throw new Error('unreachable')
        if (method === 'claims.claim') return await at.serveClaim(req, 'sender-peer')
        if (method === 'claims.seal') return await at.serveSeal!(req, 'sender-peer')
        throw new Error(`${method} not served`)
      }
    } as unknown as RpcClient<never>
    for (const k of keys) byPeer.set(k.peer, claimsAt(k.peer, { sign: k.sign, committee, rpc }))
    return { keys, committee, asked, rpc, seats: keys.map((k) => byPeer.get(k.peer)!) }
  }

  it('a receiver counting one seat more than the sender finds enough seals once the other seats sealed after the decision', async () => {
    const { keys, committee, asked, rpc, seats } = await sevenSeats()
    // each signer votes: its seat grants its claim, and the grant rides the vote
    const votes: Vote[] = await Promise.all(quorums.map(async (q, i): Promise<Vote> => {
      const claim = { quorum: q, nonce: nonceOfSecret(secrets[i]!), sig: 'ab' }
      const grants = await seats[i]!.grantOwn!(txid, claim, [STATE], [])
      return { vote: 'yes', quorumDid: q, credit: { did: q, hash: txid, signType: '0', signature: '', privSignature: 'ab' }, pledge: [], pledgeMilli: 0, claim: { nonce: claim.nonce, sig: 'ab', states: [state] }, grants }
    }))
    const senderKey = await peerKey()
    const senderClaims = new SenderClaims(claimsAt(senderKey.peer, { sign: senderKey.sign, committee, rpc }), ledger, silentLogger)
    expect((await senderClaims.claim(txid, contract, votes)).granted).to.equal(true)
    // each signs, and its seat seals its own record as it signs
    const items = [{ stateHash: STATE, holder: txid }]
    const presealed: PeerSeal[] = (await Promise.all(quorums.map(async (q, i) => await seats[i]!.sealSigned!(txid, q, nonceOfSecret(secrets[i]!), items)))).flat()
    expect(presealed).to.have.length(5)
    const consents = quorums.map((q, i) => ({ quorum: q, nonce: nonceOfSecret(secrets[i]!), secret: secrets[i]! }))
    const sealed = await senderClaims.seal(txid, contract, votes, consents, presealed)
    expect(sealed.granted, 'decided on the signers\' seals').to.equal(true)
    expect(asked, 'nobody asked for the decision').to.deep.equal([])
    // a receiver that counts an eighth seat (registered, matured there first): q(8) = 6
    const eighth = await peerKey()
    const receiver = claimsAt((await peerKey()).peer, { committee: () => [...committee(), eighth.peer] })
    expect((await receiver.checkSeals!(items, senderClaims.certificate(txid)!)).granted, 'five seals of eight seats').to.equal(false)
    // the delivery refused as short: the certificate grows
    expect(await senderClaims.grow(txid)).to.equal(true)
    const certificate = senderClaims.certificate(txid)!
    const r = await receiver.checkSeals!(items, certificate)
    expect(r.granted, `${certificate.length} seals in the certificate`).to.equal(true)
    // after the decision only the two seats that are not signers were asked, to claim and to seal
    // (the signers' seats hold and sealed the records already)
    const others = keys.slice(5).map((k) => k.peer)
    expect(asked.filter((a) => others.every((p) => !a.endsWith(p))), 'requests to the signers\' seats').to.deep.equal([])
    expect(asked.sort()).to.deep.equal(others.flatMap((p) => [`claims.claim ${p}`, `claims.seal ${p}`]).sort())
  })

  it('a sender restarted right after an early decision grows the kept certificate from the signers\' claims and consents kept with it', async () => {
    const { keys, committee, asked, rpc, seats } = await sevenSeats()
    const items = [{ stateHash: STATE, holder: txid }]
    // the five signers' seats granted as their quorums voted and sealed as they signed; the
    // deciding process kept those five seals and stopped before the other two seats were asked
    const kept: PeerSeal[] = []
    const votes: Vote[] = []
    for (const [i, q] of quorums.entries()) {
      const nonce = nonceOfSecret(secrets[i]!)
      const grants = await seats[i]!.grantOwn!(txid, { quorum: q, nonce, sig: 'ab' }, [STATE], [])
      votes.push({ vote: 'yes', quorumDid: q, credit: { did: q, hash: txid, signType: '0', signature: '', privSignature: 'ab' }, pledge: [], pledgeMilli: 0, claim: { nonce, sig: 'ab', states: [state] }, grants })
      kept.push(...await seats[i]!.sealSigned!(txid, q, nonce, items))
    }
    const consents = quorums.map((q, i) => ({ quorum: q, nonce: nonceOfSecret(secrets[i]!), secret: secrets[i]! }))
    // what the decision keeps beside the certificate (the deciding process's own regrowth)
    const senderKey = await peerKey()
    // (stopped right after deciding: nothing it sends after the decision arrives)
    const gone = { call: async () => { throw new Error('the process stopped') } } as unknown as RpcClient<never>
    const deciding = new SenderClaims(claimsAt(senderKey.peer, { sign: senderKey.sign, committee, rpc: gone }), ledger, silentLogger)
    expect((await deciding.claim(txid, contract, votes)).granted, 'granted in the votes').to.equal(true)
    const sealed = await deciding.seal(txid, contract, votes, consents, kept)
    expect(sealed.granted).to.equal(true)
    expect(deciding.certificate(txid), 'the deciding process gathered nothing more').to.have.length(5)
    const regrowth = deciding.regrowth(txid, votes, consents)
    expect(regrowth, 'kept while the other seats are still asked').to.not.equal(undefined)
    const stored = JSON.parse(JSON.stringify(regrowth)) as unknown
    // a receiver that counts an eighth seat: q(8) = 6, so the five kept seals are not enough
    const eighth = await peerKey()
    const receiver = claimsAt((await peerKey()).peer, { committee: () => [...committee(), eighth.peer] })
    expect((await receiver.checkSeals!(items, kept)).granted, 'five seals of eight seats').to.equal(false)
    // the restarted process: no grant, no vote in memory, only the record the decision kept
    const restarted = new SenderClaims(claimsAt(senderKey.peer, { sign: senderKey.sign, committee, rpc }), ledger, silentLogger)
    const kept2 = asRegrowth(stored)
    expect(kept2).to.not.equal(undefined)
    const grown = await restarted.regrow(txid, contract, kept2!, kept)
    expect(grown.length, 'seals after the regrowth').to.be.at.least(7)
    expect((await receiver.checkSeals!(items, grown)).granted).to.equal(true)
    // only the two seats that are not signers' were asked, to claim and to seal
    const others = keys.slice(5).map((k) => k.peer)
    expect(asked.filter((a) => others.every((p) => !a.endsWith(p)))).to.deep.equal([])
  })

  it('a kept regrowth that is not whole is not used', () => {
    expect(asRegrowth(undefined)).to.equal(undefined)
    expect(asRegrowth({ claims: [], consents: [] })).to.equal(undefined)
    expect(asRegrowth({ claims: [{ quorum: 'q', nonce: 'n', sig: 's', states: [1] }], consents: [] })).to.equal(undefined)
    expect(asRegrowth({ claims: [{ quorum: 'q', nonce: 'n', sig: 's', states: ['a@b'] }], consents: [{ quorum: 'q', nonce: 'n' }] })).to.equal(undefined)
    expect(asRegrowth({ claims: [{ quorum: 'q', nonce: 'n', sig: 's', states: ['a@b'] }], consents: [{ quorum: 'q', nonce: 'n', secret: 'x' }] })).to.deep.equal({ claims: [{ quorum: 'q', nonce: 'n', sig: 's', states: ['a@b'] }], consents: [{ quorum: 'q', nonce: 'n', secret: 'x' }] })
  })

  it('a receiver\'s check of an earlier block ends once q(n) of its arbiters showed their seals, without waiting for the silent ones', async function () {
    this.timeout(10_000)
    const seats = await seatsOf(7)
    const items = [{ stateHash: STATE, holder: txid }]
    // the five signers' seats sealed the state to the transaction; the other two never answer
    for (const [i, q] of quorums.entries()) {
      const nonce = nonceOfSecret(secrets[i]!)
      await seats[i]!.claims.grantOwn!(txid, { quorum: q, nonce, sig: 'ab' }, [STATE], [])
      expect(await seats[i]!.claims.sealSigned!(txid, q, nonce, items)).to.have.length(1)
    }
    const silent = new Set(seats.slice(5).map((s) => s.peer))
    const rpc = {
      call: async (peer: string, method: string, req: never) => {
        if (silent.has(peer)) return await new Promise(() => {})
        if (method !== 'claims.seal') throw new Error(`${method} not served`)
        return await seats.find((s) => s.peer === peer)!.claims.serveSeal!(req, 'receiver-peer')
      }
    } as unknown as RpcClient<never>
    // asked with a minute for each arbiter: the answer comes long before
    const receiver = claimsAt((await peerKey()).peer, { committee: () => seats.map((s) => s.peer), rpc, timeoutMs: 60_000 })
    const r = await receiver.priorSeals!(items)
    expect(r.refused ?? r.unanswered).to.equal(undefined)
    expect(r.seals, 'the five seals shown, kept to carry with the chain').to.have.length(5)
  })
})
