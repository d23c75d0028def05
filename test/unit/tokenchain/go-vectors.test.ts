/**
 * Golden vectors made by running the reference's own Go packages (test/fixtures/go-vectors.json,
 * generated from rubixgoplatform v0.0.20 with fxamacker/cbor v1.5.1 and decred secp256k1): every
 * block, contract, RAC, token id and key is rebuilt here from the vector's inputs with this node's
 * code and compared byte for byte (content, hash, envelope, ids); every signature the reference
 * accepts verifies here and every one it refuses is refused.
 */
import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  blockIdFor, cidV0ForContent, createBlock, createContract, createRac, decodeBlockEnvelope, decodeContract, decodeRacEnvelope,
  encodeBlockEnvelope, encodeContractEnvelope, encodeRacEnvelope, encodeSignatureMap, ftTokenId, racTokenContent, racTokenId, sha3Hex, transactionId,
  wholeTokenContent, wholeTokenId, withContractSignature,
  type BlockContent, type ContractContent, type ContractToken, type CreditSignature, type GenesisTokenInfo, type PledgeToken, type RacContent, type TransTokenEntry
} from '../../../src/tokenchain/index.js'
import { verifyHashHex } from '../../../src/wallet/signing.js'
import { liteKeyFromMnemonic } from '../../../src/wallet/bip39.js'
import { keyPairFromPrivate, normalisePoint, p256FromPkcs8Der, parsePublicKeyPem, type Curve } from '../../../src/wallet/keys.js'
import { unsealPrivateKey } from '../../../src/wallet/seal.js'
import { announcementDigest, announcementTime, parseAnnouncement } from '../../../src/node/identity/announcement.js'
import { parseGoTime } from '../../../src/util/go-time.js'
import { ROOT } from '../../helpers/cli.js'

type Any = any
interface Vector { name: string, inputs: Any, expected: Any }
const G = JSON.parse(readFileSync(join(ROOT, 'test/fixtures/go-vectors.json'), 'utf8')) as Record<string, Any>

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
const bytes = (h: string): Uint8Array => new Uint8Array(Buffer.from(h, 'hex'))
const nonEmpty = (s: string | null | undefined): string | undefined => s === undefined || s === null || s === '' ? undefined : s

// every key the vectors sign with, by DID
const KEYS = new Map<string, { curve: Curve, point: Uint8Array }>()
for (const k of G.keys as Any[]) {
  const curve: Curve = k.curve === 'P-256' ? 'p256' : 'secp256k1'
  const point = k.public_key_hex !== undefined ? bytes(k.public_key_hex) : bytes(k.public_key_compressed_hex)
  KEYS.set(k.did, { curve, point: normalisePoint(curve, point) })
}
function verifies (did: string, hash: string, sigHex: string): boolean {
  const key = KEYS.get(did)
  if (key === undefined) throw new Error(`no key for ${did} in the vectors`)
  if (sigHex === '' || !/^([0-9a-f]{2})+$/.test(sigHex)) return false
  return verifyHashHex(key, hash, bytes(sigHex))
}

// ------------------------------------------------------------------ contracts

function contractTokens (list: Any[] | null): Record<string, ContractToken> | undefined {
  if (list === null || list === undefined || list.length === 0) return undefined
  const out: Record<string, ContractToken> = {}
  for (const t of list) out[t.token] = { tokenType: t.token_type, tokenValue: t.token_value, ...(nonEmpty(t.owner_did) !== undefined ? { owner: t.owner_did } : {}), ...(nonEmpty(t.block_id) !== undefined ? { blockId: t.block_id } : {}) }
  return out
}

function contractContent (i: Any): ContractContent {
  const t = i.trans_info
  const ti: ContractContent['transInfo'] = {}
  const set = <K extends keyof ContractContent['transInfo']>(k: K, v: ContractContent['transInfo'][K] | undefined): void => { if (v !== undefined) ti[k] = v }
  set('sender', nonEmpty(t.sender_did))
  set('receiver', nonEmpty(t.receiver_did))
  set('comment', nonEmpty(t.comment))
  set('transTokens', contractTokens(t.trans_tokens))
  set('exchangeTokens', contractTokens(t.exchange_tokens))
  set('deployer', nonEmpty(t.deployer_did))
  set('scToken', nonEmpty(t.smart_contract_token))
  set('committedTokens', contractTokens(t.commited_tokens))
  set('executor', nonEmpty(t.executor_did))
  set('scData', nonEmpty(t.smart_contract_data))
  set('pinningDid', nonEmpty(t.pinning_node_did))
  set('nft', nonEmpty(t.nft))
  set('nftData', nonEmpty(t.nft_data))
  return { type: i.type, pledgeMode: i.pledge_mode, transInfo: ti, totalRbts: i.total_rbts }
}

describe('golden vectors from the reference\'s Go code', () => {
  describe('keys and key files', () => {
    it('LITE_KEY_DERIVATION: the BIP-32 children of the mnemonic', () => {
      const v = (G.key_files as Vector[]).find((x) => x.name === 'LITE_KEY_DERIVATION')!
      for (const c of v.expected.children as Any[]) {
        const k = liteKeyFromMnemonic(v.inputs.mnemonic, c.child_path)
        expect(hex(k.privateKey), `path ${c.child_path as number}`).to.equal(c.private_key_hex)
        expect(hex(normalisePoint('secp256k1', k.publicKey))).to.equal(c.public_key_hex)
      }
    })
    for (const name of ['KEYFILE_LITE_ALICE', 'KEYFILE_BASIC_CAROL']) {
      it(`${name}: the sealed private key opens with the password; the public key file reads back`, async () => {
        const v = (G.key_files as Vector[]).find((x) => x.name === name)!
        const curve: Curve = name.includes('BASIC') ? 'p256' : 'secp256k1'
        const plain = await unsealPrivateKey(v.inputs['pvtKey.pem'], v.inputs.password)
        const priv = plain.length === 32 ? plain : p256FromPkcs8Der(plain).privateKey
        expect(hex(priv)).to.equal(v.expected.private_key_hex)
        expect(hex(normalisePoint(curve, keyPairFromPrivate(curve, priv).publicKey))).to.equal(v.expected.public_key_hex)
        expect(hex(parsePublicKeyPem(v.inputs['pubKey.pem']).point)).to.equal(v.expected.public_key_hex)
        await unsealPrivateKey(v.inputs['pvtKey.pem'], 'not the password').then(() => expect.fail('a wrong password opened the key'), () => {})
      })
    }
  })

  describe('contracts', () => {
    for (const v of G.contracts as Vector[]) {
      it(`${v.name as string}`, () => {
        const e = v.expected
        let envelope: Uint8Array
        if (v.inputs.envelope_hex !== undefined) {
          // decode-only: the reference's bytes decode and re-encode to themselves
          envelope = bytes(v.inputs.envelope_hex)
          const d = decodeContract(envelope)
          expect(hex(encodeContractEnvelope(d))).to.equal(v.inputs.envelope_hex)
          expect(d.hash).to.equal(e.hash ?? e.decoded?.hash)
        } else {
          let c = createContract(contractContent(v.inputs))
          expect(hex(c.contentBytes), 'content').to.equal(e.content_hex)
          expect(c.hash).to.equal(e.hash)
          for (const [did, sig] of Object.entries(v.inputs.key_signatures ?? {})) c = withContractSignature(c, did, sig as string, (v.inputs.share_signatures ?? {})[did] ?? '')
          envelope = encodeContractEnvelope(c)
          expect(hex(envelope), 'envelope').to.equal(e.envelope_hex)
        }
        if (e.transaction_id !== undefined) expect(transactionId(envelope)).to.equal(e.transaction_id)
        const d = decodeContract(envelope)
        if (e.decoded !== undefined) {
          expect(d.hash).to.equal(e.decoded.hash)
          expect(d.content.type).to.equal(e.decoded.type)
          expect(d.content.totalRbts).to.equal(e.decoded.total_rbts)
          expect(d.content.transInfo.sender ?? '').to.equal(e.decoded.sender_did)
          expect(d.content.transInfo.receiver ?? '').to.equal(e.decoded.receiver_did)
          expect(d.content.transInfo.comment ?? '').to.equal(e.decoded.comment)
          expect(Object.keys(d.content.transInfo.transTokens ?? {})).to.deep.equal((e.decoded.trans_token_info ?? []).map((t: Any) => t.token))
        }
        for (const [did, ok] of Object.entries(e.key_signature_checks ?? {})) {
          expect(verifies(did, d.hash, d.keySignatures[did] ?? ''), `key signature of ${did}`).to.equal(ok)
        }
      })
    }
  })

  describe('RACs (test and part tokens)', () => {
    for (const v of G.racs as Vector[]) {
      it(`${v.name as string}`, () => {
        const i = v.inputs
        const e = v.expected
        const content: RacContent = {
          type: i.type,
          version: 1,
          did: i.did,
          // rac.CreateRac numbers the token with its loop index (0), not token_number
          tokenNumber: i.function === 'rac.CreateRac' ? 0 : i.token_number,
          totalSupply: i.total_supply,
          ...(nonEmpty(i.timestamp) !== undefined ? { timestamp: i.timestamp } : {}),
          ...(nonEmpty(i.creator_id) !== undefined ? { creatorId: i.creator_id } : {}),
          ...(nonEmpty(i.creator_input) !== undefined ? { creatorInput: i.creator_input } : {}),
          ...(i.part_info !== null ? { partInfo: { parentId: i.part_info.parent, partNumber: i.part_info.part_num, value: i.part_info.value } } : {}),
          ...(i.token_level !== 0 ? { tokenLevel: i.token_level } : {})
        }
        const rac = createRac(content)
        expect(hex(rac.contentBytes), 'content').to.equal(e.content_hex)
        expect(rac.hash).to.equal(e.hash)
        expect(hex(encodeRacEnvelope({ ...rac }))).to.equal(e.envelope_unsigned_hex)
        const env = encodeRacEnvelope({ ...rac, signature: i.signature })
        expect(hex(env), 'envelope').to.equal(e.envelope_hex)
        expect(racTokenContent(env)).to.equal(e.token_content)
        expect(racTokenId(env)).to.equal(e.token_id)
        expect(verifies(i.did, rac.hash, i.signature)).to.equal(e.signature_check)
        const back = decodeRacEnvelope(env)
        expect(back.hash).to.equal(e.decoded.hash)
        expect(back.signature).to.equal(e.decoded.signature)
        expect(back.content.type).to.equal(e.decoded.type)
        if (i.timestamp !== '') expect(parseGoTime(back.content.timestamp!), 'the RAC timestamp is Go time text').to.not.equal(undefined)
      })
    }
  })

  describe('blocks', () => {
    const byName = new Map<string, Vector>((G.blocks as Vector[]).map((v) => [v.name, v]))

    function blockContent (v: Vector): BlockContent {
      const i = v.inputs
      const t = i.trans_info
      const tokens: Record<string, TransTokenEntry> = {}
      for (const tok of t.tokens as Any[]) {
        const prevName: string = i.prev_blocks[tok.token] ?? ''
        const prev = prevName === '' ? undefined : byName.get(prevName)!.expected
        tokens[tok.token] = {
          tokenType: tok.token_type,
          blockNumber: prev === undefined ? '0' : String(prev.block_numbers[tok.token] + 1),
          previousBlockId: prev === undefined ? '' : prev.block_ids[tok.token],
          ...(nonEmpty(tok.unpledged_id) !== undefined ? { unpledgedId: tok.unpledged_id } : {}),
          ...(nonEmpty(tok.commited_did) !== undefined ? { committedDid: tok.commited_did } : {})
        }
      }
      const c: BlockContent = { transactionType: i.transaction_type, owner: i.owner, transInfo: { tokens }, childTokens: i.child_tokens ?? [] }
      const ti = c.transInfo
      if (nonEmpty(t.sender_did) !== undefined) ti.sender = t.sender_did
      if (nonEmpty(t.receiver_did) !== undefined) ti.receiver = t.receiver_did
      if (nonEmpty(t.comment) !== undefined) ti.comment = t.comment
      if (nonEmpty(t.tid) !== undefined) ti.tid = t.tid
      if (t.block_hex !== null && t.block_hex !== undefined) ti.block = bytes(t.block_hex)
      if (nonEmpty(t.ref_id) !== undefined) ti.refId = t.ref_id
      if (nonEmpty(t.deployer_did) !== undefined) ti.deployer = t.deployer_did
      if (nonEmpty(t.executor_did) !== undefined) ti.executor = t.executor_did
      if (nonEmpty(t.pinning_node_did) !== undefined) ti.pinningDid = t.pinning_node_did
      if (i.genesis_block !== null) {
        const info: Record<string, GenesisTokenInfo> = {}
        for (const g of i.genesis_block.info as Any[]) {
          const committed: Record<string, TransTokenEntry> = {}
          for (const ct of (g.commited_tokens ?? []) as Any[]) {
            committed[ct.token] = { tokenType: ct.token_type, blockNumber: '0', previousBlockId: '', ...(nonEmpty(ct.unpledged_id) !== undefined ? { unpledgedId: ct.unpledged_id } : {}), ...(nonEmpty(ct.commited_did) !== undefined ? { committedDid: ct.commited_did } : {}) }
          }
          info[g.token] = {
            level: g.token_level,
            number: g.token_number,
            ...(nonEmpty(g.migrated_block_id) !== undefined ? { migratedBlockId: g.migrated_block_id } : {}),
            ...(nonEmpty(g.previous_id) !== undefined ? { previousId: g.previous_id } : {}),
            ...(nonEmpty(g.parent_id) !== undefined ? { parentId: g.parent_id } : {}),
            ...(g.grand_parent_id !== null ? { grandParentIds: g.grand_parent_id } : {}),
            committedTokens: committed,
            ...(g.smart_contract_value !== 0 ? { smartContractValue: g.smart_contract_value } : {})
          }
        }
        c.genesis = { type: i.genesis_block.type, info }
      }
      if (i.smart_contract_hex !== null) c.smartContract = bytes(i.smart_contract_hex)
      if (i.quorum_signature !== null) {
        c.quorumSignatures = (i.quorum_signature as Any[]).map((q): CreditSignature => ({ did: q.did, hash: q.hash, signType: q.sign_type, signature: q.signature, privSignature: q.priv_signature }))
      }
      if (i.pledge_details !== null) {
        const p: Record<string, PledgeToken[]> = {}
        for (const d of i.pledge_details as Any[]) (p[d.did] ??= []).push({ token: d.token, tokenType: d.token_type, tokenBlockId: d.token_block_id })
        c.pledgeDetails = p
      }
      if (nonEmpty(i.smart_contract_data) !== undefined) c.smartContractData = i.smart_contract_data
      if (i.token_value !== 0) c.tokenValue = i.token_value
      if (i.initiator_signature !== null) {
        const s = i.initiator_signature
        c.initiatorSignature = { hash: s.hash, signType: s.sign_type, initiatorDid: s.InitiatorDID, privSignature: s.priv_signature, nlssShareSignature: s.nlss_share_signature }
      }
      if (nonEmpty(i.nft_data) !== undefined) c.nftData = i.nft_data
      if (i.epoch !== 0) c.epoch = i.epoch
      return c
    }

    for (const v of G.blocks as Vector[]) {
      it(`${v.name} (type ${v.inputs.transaction_type as string})`, () => {
        const e = v.expected
        const unsigned = createBlock(blockContent(v))
        expect(hex(unsigned.contentBytes), 'content').to.equal(e.content_hex)
        expect(unsigned.hash).to.equal(e.hash)
        expect(hex(encodeBlockEnvelope(unsigned)), 'unsigned envelope').to.equal(e.envelope_unsigned_hex)
        const block = createBlock(blockContent(v), v.inputs.signatures)
        expect(hex(encodeSignatureMap(block.signatures)), 'signature map').to.equal(e.signature_map_hex)
        expect(hex(encodeBlockEnvelope(block)), 'envelope').to.equal(e.envelope_hex)
        for (const [token, id] of Object.entries(e.block_ids as Record<string, string>)) expect(blockIdFor(block, token), token).to.equal(id)
        // the reference's bytes decode to the same block and re-encode to themselves
        const d = decodeBlockEnvelope(bytes(e.envelope_hex))
        expect(d.hash).to.equal(e.hash)
        expect(hex(d.contentBytes)).to.equal(e.content_hex)
        for (const [did, ok] of Object.entries(e.signature_checks ?? {})) expect(verifies(did, d.hash, d.signatures[did] ?? ''), `block signature of ${did}`).to.equal(ok)
        const tid = d.content.transInfo.tid
        for (const [did, ok] of Object.entries(e.credit_signature_checks_over_tid ?? {})) {
          const q = d.content.quorumSignatures!.find((s) => s.did === did)!
          expect(verifies(did, tid!, q.privSignature), `credit signature of ${did}`).to.equal(ok)
        }
        if (e.initiator_signature_checks !== undefined) {
          const s = d.content.initiatorSignature!
          // an NFT block's contract is not in the block (CreateNewBlock ignores it): the vector passes it in nft_hex
          const contractBytes = d.content.smartContract ?? bytes(v.inputs.nft_hex)
          const contract = decodeContract(contractBytes)
          const checks = e.initiator_signature_checks
          if (checks.hash_is_contract_hash !== undefined) expect(s.hash === contract.hash).to.equal(checks.hash_is_contract_hash)
          if (checks.tid_is_sha3_of_contract !== undefined) expect(transactionId(contractBytes) === tid).to.equal(checks.tid_is_sha3_of_contract)
          expect(verifies(s.initiatorDid, s.hash, s.privSignature)).to.equal(checks.valid_over_hash)
        }
      })
    }
  })

  describe('token ids', () => {
    for (const v of G.token_ids as Vector[]) {
      it(`${v.name}`, () => {
        const i = v.inputs
        const e = v.expected
        if (i.content !== undefined) expect(cidV0ForContent(i.content)).to.equal(e.token_id)
        if (i.ft_name !== undefined) expect(ftTokenId(i.ft_name, i.ft_num, i.did)).to.equal(e.token_id)
        if (i.token_level !== undefined && i.content === undefined) {
          expect(wholeTokenContent(i.token_level, i.token_number)).to.equal(e.token_string)
          expect(wholeTokenId(i.token_level, i.token_number)).to.equal(e.token_id)
        }
      })
    }
  })

  describe('signatures', () => {
    for (const v of G.signatures as Vector[]) {
      it(`${v.name}: the reference's verdict on every case`, () => {
        expect(hex(new TextEncoder().encode(v.inputs.hash))).to.equal(v.inputs.signed_bytes_hex)
        for (const c of v.expected.cases as Any[]) expect(verifies(v.inputs.did, c.hash, c.signature_hex), c.desc).to.equal(c.verify)
      })
    }
  })

  describe('DID announcements', () => {
    for (const v of G.announcements as Vector[]) {
      it(`${v.name}: a reference node's announcement (Go time text with m=) is read, hashed as received and verified`, () => {
        const i = v.inputs
        const e = v.expected
        const published = JSON.parse(e.published_json)
        const now = Date.parse('2026-11-26T12:30:00Z')
        const a = parseAnnouncement(published, now)
        expect(a.time).to.equal(i.time)
        expect(announcementTime(a)).to.equal(parseGoTime(i.time)!.unixMs)
        expect(announcementDigest(a)).to.equal(e.hash)
        expect(sha3Hex(i.peer_id + i.did + i.time)).to.equal(e.hash)
        expect(Buffer.from(a.signature, 'base64').toString('hex')).to.equal(i.signature_hex)
        expect(verifies(i.did, announcementDigest(a), i.signature_hex)).to.equal(e.signature_check)
        for (const alt of e.altered_time_checks as Any[]) {
          const changed = (i.altered_times as Any[]).find((x) => x.desc === alt.desc).time as string
          const digest = announcementDigest({ ...a, time: changed })
          expect(digest, alt.desc).to.equal(alt.hash)
          expect(verifies(i.did, digest, i.signature_hex), alt.desc).to.equal(alt.verify)
        }
      })
    }
  })
})
