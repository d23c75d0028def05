/**
 * Test fixtures: real P-256 keys (generated with node:crypto) per fake DID, an owner key and a
 * quorum key each, and a builder for signed test-token chains.
 *
 * Mode "raw" signs as the reference does: ECDSA over the leftmost 32 bytes of the ASCII hex string
 * used directly as the digest (no further hashing); noble-curves signs (node:crypto always hashes
 * its input) and the wallet's `Verifier` checks, one per key as the node caches them. Mode "node-sha256" uses node:crypto sign/verify with cached
 * KeyObjects over the same 32 bytes (hashed with SHA-256 first): not wire-compatible, used only to
 * measure node:crypto speed in the benchmark. Mode "raw-secp256k1" signs as the reference's lite
 * DIDs do (secp256k1, raw digest) through the wallet's own signer and `Verifier` (one per key, as
 * the node caches them), so it runs on whichever secp256k1 backend is selected.
 */
import crypto, { type KeyObject } from 'node:crypto'
import { p256 } from '@noble/curves/nist.js'
import {
  createBlock, createContract, createRac, encodeBlockEnvelope, encodeContractEnvelope, encodeRacEnvelope,
  nextTokenEntry, racTokenContent, racTokenId, setSignature, testTokenGenesis, withContractSignature,
  blockIdFor, ContractType, PledgeMode, RacType, TokenType, TransactionType,
  type Block, type BlockContent, type SignatureVerifier, type SignerRole
} from '../../../src/tokenchain/index.js'
import { generateKeyPair as walletKeyPair, rawPublicPem } from '../../../src/wallet/keys.js'
import { didFromPublicFiles } from '../../../src/wallet/did-string.js'
import { DidFile, DidType, type DidDocument } from '../../../src/wallet/did-document.js'
import { signMessage, Verifier } from '../../../src/wallet/signing.js'
import { decodeCbor, encodeCbor, type CborObject } from '../../../src/tokenchain/cbor.js'

const B32 = 'abcdefghijklmnopqrstuvwxyz234567'

interface KeyPair { priv: Uint8Array, pub: Uint8Array, privKey?: KeyObject, pubKey?: KeyObject }

/**
 * A P-256 key pair made with noble and imported into node:crypto as JWK. Not generateKeyPairSync +
 * export: on Node 20 a garbage collection during the JWK export of a key whose key-generation job
 * is being finalized deadlocks the process (the job's destructor takes the key's mutex, which the
 * export holds), which hung whole test runs.
 */
function newKeyPair (): KeyPair {
  const priv = p256.utils.randomSecretKey()
  const pub = p256.getPublicKey(priv, false)
  const b64 = (x: Uint8Array): string => Buffer.from(x).toString('base64url')
  const jwk = { kty: 'EC', crv: 'P-256', x: b64(pub.subarray(1, 33)), y: b64(pub.subarray(33, 65)) }
  const privKey = crypto.createPrivateKey({ key: { ...jwk, d: b64(priv) }, format: 'jwk' })
  const pubKey = crypto.createPublicKey({ key: jwk, format: 'jwk' })
  return { priv, pub, privKey, pubKey }
}

function newSecpKeyPair (): KeyPair {
  const kp = walletKeyPair('secp256k1')
  return { priv: kp.privateKey, pub: kp.publicKey }
}

export type SignMode = 'raw' | 'node-sha256' | 'raw-secp256k1'

export class KeyRing {
  private readonly keys = new Map<string, { owner: KeyPair, quorum: KeyPair }>()
  private counter = 0
  verifyCalls = 0
  /** Parsed secp256k1 keys, per public key (raw-secp256k1 mode). */
  private verifiers = new Map<Uint8Array, Verifier>()
  constructor (readonly mode: SignMode = 'raw') {}

  /** A fresh DID-shaped identifier with its own owner and quorum keys. */
  newDid (): string {
    const bytes = crypto.randomBytes(52)
    let s = 'bafybmi'
    for (const x of bytes) s += B32[x % 32]
    this.counter++
    const make = this.mode === 'raw-secp256k1' ? newSecpKeyPair : newKeyPair
    this.keys.set(s, { owner: make(), quorum: make() })
    return s
  }

  private pair (did: string, role: SignerRole): KeyPair {
    const k = this.keys.get(did)
    if (k === undefined) throw new Error(`no key for ${did}`)
    return role === 'quorum' ? k.quorum : k.owner
  }

  sign (did: string, messageAsciiHex: string, role: SignerRole = 'owner'): string {
    const msg = Buffer.from(messageAsciiHex, 'ascii').subarray(0, 32)
    const k = this.pair(did, role)
    if (this.mode === 'node-sha256') return crypto.sign('sha256', msg, k.privKey!).toString('hex')
    if (this.mode === 'raw-secp256k1') return Buffer.from(signMessage('secp256k1', k.priv, msg)).toString('hex')
    const sig = p256.sign(msg, k.priv, { prehash: false, format: 'der' })
    return Buffer.from(sig).toString('hex')
  }

  /** Forget parsed keys (a cold start for the next validation). */
  clearVerifierCache (): void { this.verifiers = new Map() }

  readonly verifier: SignatureVerifier = {
    verify: async (did, messageAsciiHex, signatureHex, role = 'owner') => {
      this.verifyCalls++
      const k = this.keys.get(did)
      if (k === undefined) return false
      const kp = role === 'quorum' ? k.quorum : k.owner
      const msg = Buffer.from(messageAsciiHex, 'ascii').subarray(0, 32)
      const sig = Buffer.from(signatureHex, 'hex')
      if (this.mode === 'node-sha256') return crypto.verify('sha256', msg, kp.pubKey!, sig)
      // the wallet's own Verifier, one per key, as the node's verifier keeps them
      let v = this.verifiers.get(kp.pub)
      if (v === undefined) { v = new Verifier({ curve: this.mode === 'raw-secp256k1' ? 'secp256k1' : 'p256', point: kp.pub }); this.verifiers.set(kp.pub, v) }
      return v.verify(msg, sig)
    }
  }
}

/** What the chain builders need of a key ring. */
export interface ChainSigner {
  newDid: () => string
  sign: (did: string, messageAsciiHex: string, role?: SignerRole) => string
}

/**
 * Real lite DIDs (type 4: a secp256k1 key, `pubKey.pem` only, the DID the hash of that file), as
 * reference wallets make them, with their documents for a `DidResolver`. A lite DID signs as owner
 * and as quorum with the same key. Signing goes through the wallet's signer (the selected backend).
 */
export class LiteDidRing implements ChainSigner {
  private readonly keys = new Map<string, Uint8Array>()
  readonly docs = new Map<string, DidDocument>()
  /** resolves the ring's DIDs (undefined for others), counting lookups */
  resolves = 0
  readonly resolver = { resolve: async (did: string): Promise<DidDocument | undefined> => { this.resolves++; return this.docs.get(did) } }

  newDid (): string {
    const kp = walletKeyPair('secp256k1')
    const files = { [DidFile.PUB_KEY]: rawPublicPem('secp256k1', kp.publicKey) }
    const did = didFromPublicFiles(files)
    this.keys.set(did, kp.privateKey)
    this.docs.set(did, { did, type: DidType.LITE, files })
    return did
  }

  sign (did: string, messageAsciiHex: string): string {
    const k = this.keys.get(did)
    if (k === undefined) throw new Error(`no key for ${did}`)
    return Buffer.from(signMessage('secp256k1', k, Buffer.from(messageAsciiHex, 'ascii').subarray(0, 32))).toString('hex')
  }
}

export interface TestChain {
  tokenId: string
  tokenContent: string
  owners: string[]
  quorums: string[]
  blocks: Block[]
  envelopes: Uint8Array[]
}

/** Content of a transfer block from `sender` to `receiver`, signed by sender and quorums. */
export function transferBlock (ring: ChainSigner, tokenId: string, previous: Block, sender: string, receiver: string, quorums: string[], epoch = 1_700_000_000): Block {
  const prevId = blockIdFor(previous, tokenId)
  let contract = createContract({
    type: ContractType.RBT_DIRECT,
    pledgeMode: PledgeMode.PERIODIC,
    transInfo: { sender, receiver, comment: 'test', transTokens: { [tokenId]: { tokenType: TokenType.TEST_RBT, tokenValue: 1, owner: sender, blockId: prevId } } },
    totalRbts: 1
  })
  const senderSig = ring.sign(sender, contract.hash)
  contract = withContractSignature(contract, sender, senderSig)
  const env = encodeContractEnvelope(contract)
  const tid = crypto.createHash('sha3-256').update(env).digest('hex')
  const content: BlockContent = {
    transactionType: TransactionType.TRANSFERRED,
    owner: receiver,
    transInfo: { sender, receiver, comment: 'test', tid, tokens: { [tokenId]: nextTokenEntry(previous, tokenId) } },
    smartContract: env,
    quorumSignatures: quorums.map(q => ({ did: q, hash: '', signType: '0', signature: '', privSignature: ring.sign(q, tid, 'quorum') })),
    pledgeDetails: { [quorums[0]!]: [{ token: 'QmPledgeTokenPlaceholder000000000000000000000', tokenType: TokenType.TEST_RBT, tokenBlockId: prevId }] },
    tokenValue: 1,
    childTokens: [],
    initiatorSignature: { hash: contract.hash, signType: 0, initiatorDid: sender, privSignature: senderSig, nlssShareSignature: '' },
    epoch
  }
  let block = createBlock(content)
  for (const q of quorums) block = setSignature(block, q, ring.sign(q, block.hash, 'quorum'))
  return block
}

/** A test-token chain: genesis by owners[0], then transfers owners[i-1] → owners[i]. */
export function buildTestTokenChain (ring: ChainSigner, transfers: number, quorumCount = 5): TestChain {
  const owners = Array.from({ length: transfers + 1 }, () => ring.newDid())
  const quorums = Array.from({ length: quorumCount }, () => ring.newDid())
  const rac = createRac({ type: RacType.TEST_TOKEN, version: 1, did: owners[0]!, tokenNumber: 0, totalSupply: 1, timestamp: '2025-01-01 00:00:00 +0000 UTC' })
  rac.signature = ring.sign(owners[0]!, rac.hash)
  const racEnv = encodeRacEnvelope(rac)
  const tokenId = racTokenId(racEnv)
  let block = createBlock(testTokenGenesis({ tokenId, owner: owners[0]!, comment: 'test token' }))
  block = setSignature(block, owners[0]!, ring.sign(owners[0]!, block.hash))
  const blocks = [block]
  for (let i = 1; i <= transfers; i++) {
    block = transferBlock(ring, tokenId, block, owners[i - 1]!, owners[i]!, quorums)
    blocks.push(block)
  }
  return { tokenId, tokenContent: racTokenContent(racEnv), owners, quorums, blocks, envelopes: blocks.map(encodeBlockEnvelope) }
}

/** A block envelope whose first signature has one hex digit flipped (it no longer verifies). */
export function tamperedEnvelope (envelope: Uint8Array): Uint8Array {
  const outer = decodeCbor(envelope) as CborObject
  const sigs = decodeCbor(outer['2'] as Uint8Array) as Record<string, string>
  const did = Object.keys(sigs)[0]!
  const s = sigs[did]!
  sigs[did] = s.slice(0, 20) + (s[20] === '0' ? '1' : '0') + s.slice(21)
  return encodeCbor({ 1: outer['1']!, 2: encodeCbor(sigs) })
}

/** A copy of a chain's envelopes with block `i`'s signature tampered (`tamperedEnvelope`). */
export function withTamperedSignature (env: Uint8Array[], i: number): Uint8Array[] {
  const out = [...env]
  out[i] = tamperedEnvelope(out[i]!)
  return out
}
