/**
 * What consensus needs from the rest of the node. Consensus is domain code: it never sees libp2p,
 * HTTP or the storage engine, only these interfaces. The node implements them.
 */
import type { SignatureVerifier } from '../tokenchain/validate.js'

/** 'Generated': an NFT created on this node and not yet deployed */
export type TokenStatus = 'Free' | 'Locked' | 'Pledged' | 'Transferred' | 'Burnt' | 'Generated'

/** A token as the ledger keeps it. Values are integer milli-RBT. */
export interface TokenState {
  tokenId: string
  /** reference token type code (tokenchain TokenType) */
  tokenType: number
  valueMilli: number
  owner: string
  status: TokenStatus
  /** `<n>-<hash>` of the latest block of this token's chain */
  latestBlockId: string
  /** part tokens: the token they were split from */
  parentId?: string
  /** hex RAC token content for RAC-backed tokens (test RBT, parts) */
  content?: string
  /** transaction that last changed the token */
  txid?: string
  /** FTs only: name and creator DID */
  ftName?: string
  creator?: string
  updatedAt: number
}

export interface TransactionRecord {
  txid: string
  tokenType: 'rbt' | 'ft' | 'nft' | 'smartContract'
  sender: string
  receiver: string
  amountMilli: number
  tokens: string[]
  quorums: string[]
  memo: string
  epoch: number
  /** role of this node's DID in the transaction */
  role: 'sender' | 'receiver' | 'quorum'
  blockId?: string
  status: 'committed' | 'pending'
}

/** Collects the writes of one atomic commit. */
export interface LedgerWriter {
  putToken: (t: TokenState) => void
  /** stores a chain block envelope at its position in the token's chain */
  putBlock: (tokenId: string, blockNumber: number, envelope: Uint8Array) => void
  putTransaction: (t: TransactionRecord) => void
  /** consensus's own records (outgoing, ledger entries, pledges, incoming) */
  putRecord: (collection: ConsensusCollection, key: string, value: unknown) => void
  delRecord: (collection: ConsensusCollection, key: string) => void
}

export type ConsensusCollection = 'cs-outgoing' | 'cs-votes' | 'cs-states' | 'cs-pledges' | 'cs-pledge-index' | 'cs-incoming' | 'cs-contents' | 'cs-pow-proofs' | 'cs-ancestors' | 'cs-validated' | 'cs-outgoing-open' | 'cs-outgoing-contract' | 'cs-outgoing-block' | 'cs-evidence' | 'cs-votes-open' | 'cs-meta' | 'cs-double-spends' | 'cs-outgoing-cert' | 'cs-distrusted-arbiters' | 'cs-certs'

/** A key range: keys `>= gte` and `< lt`, in key order. */
export interface KeyRange { gte?: string, lt?: string }
/** The range of the keys that start with `prefix`. */
export const prefixRange = (prefix: string): KeyRange => ({ gte: prefix, lt: prefix + '\uffff' })

export interface Ledger {
  token: (tokenId: string) => Promise<TokenState | undefined>
  /** tokens of a DID; `family` 'rbt' (default: whole and part RBT) or 'ft' */
  tokensOf: (did: string, status?: TokenStatus, family?: 'rbt' | 'ft') => Promise<TokenState[]>
  /**
   * ids and values of a DID's RBT (whole and part) in one status, from the wallet's owner index: no
   * token record is read, so choosing tokens costs the same for a wallet of ten tokens or of ten thousand
   */
  holdings: (did: string, status: TokenStatus) => Promise<Array<{ tokenId: string, valueMilli: number }>>
  /** ids of the first `count` Free FTs of one name and creator a DID holds, in latest-block order (an index: no record is read) */
  freeFts: (did: string, name: string, creator: string, count: number) => Promise<string[]>
  /**
   * several tokens in one read, in the order asked (undefined where unknown); `content: false`
   * leaves out their contents (a part's is some 700 bytes), for callers that only move them
   */
  tokensById: (tokenIds: readonly string[], opts?: { content?: boolean }) => Promise<Array<TokenState | undefined>>
  /** all block envelopes of a token's chain, genesis first (empty when unknown) */
  chain: (tokenId: string) => Promise<Uint8Array[]>
  /** the chains of several tokens, as `chain` gives each, in the order asked */
  chains: (tokenIds: readonly string[]) => Promise<Uint8Array[][]>
  /**
   * who signed the last block of each token's stored chain, in the order asked; undefined for an
   * unknown token and for a chain that is only its genesis
   */
  tipSigners: (tokenIds: readonly string[]) => Promise<Array<string[] | undefined>>
  record: <T>(collection: ConsensusCollection, key: string) => Promise<T | undefined>
  /** several records of one collection in one read, in the order asked (undefined where absent) */
  recordsByKey: <T>(collection: ConsensusCollection, keys: readonly string[]) => Promise<Array<T | undefined>>
  /** the records of a collection in key order, all or those in `range` */
  records: <T>(collection: ConsensusCollection, range?: KeyRange) => AsyncIterable<[string, T]>
  /** applies everything `build` wrote, atomically and durably */
  commit: (build: (w: LedgerWriter) => void) => Promise<void>
}

/** Signs as one DID. `signHash` gives the DID's transaction signature, `pvtSign` a plain key signature. */
export interface ConsensusSigner {
  readonly did: string
  /** signature over an ASCII hex hash: key signature plus, for image-share DIDs, the share signature */
  signHash: (hashHex: string) => Promise<{ keySig: string, shareSig: string, signType: 0 | 1 }>
  /** DER key signature (hex) over the ASCII bytes of `message` */
  pvtSign: (message: string) => Promise<string>
  /**
   * asks for what signing needs up front (the password), before any lock is taken; true when
   * signing then asks the caller nothing more (the node holds the DID's key); optional
   */
  unlock?: () => Promise<boolean>
}

/** Network-wide record that a token state was spent (a DHT record in the node). */
export interface SpentMarker { txid: string, blockId: string, quorum: string }
export interface SpentMarkers {
  /** markers this node already holds (its own commits, gossip): answers at once */
  known: (stateHash: string) => Promise<SpentMarker | undefined>
  /** `known` for many states in one read, in the order asked */
  knownMany: (stateHashes: readonly string[]) => Promise<Array<SpentMarker | undefined>>
  /** asks the network (DHT); may take a while */
  lookup: (stateHash: string) => Promise<SpentMarker | undefined>
  /**
   * signs the marker, keeps it, stores it as a network record on the peers closest to its key, and
   * gossips it when that store left some nodes of the network without it. A `backup` publisher
   * waits a moment first and stores nothing when another publisher's marker of the same
   * transaction reached it meanwhile (that publisher is alive and did the work).
   */
  publish: (stateHash: string, marker: SpentMarker, opts?: { backup?: boolean }) => Promise<void>
  /** many states of one transaction at once: one signature, one gossip message (no DHT records) */
  publishBatch?: (quorum: string, txid: string, items: Array<{ stateHash: string, blockId: string }>) => Promise<void>
}

/**
 * Claims of the states a transaction spends at their arbiters (docs/protocol.md, "Claims"): the
 * sender claims them for each of the five signers' quorums before any signature, each quorum
 * checks the grants naming it before it signs, and gives its claim up when its vote is released
 * before signing.
 */
export interface StateClaims {
  /**
   * The sender's claim (one walk for the transaction): every state for `txid` on behalf of each of
   * the `claimants` (the signers' quorums, each with its own signed proof), showing the sender's
   * `contract`; granted only when each state's arbiters granted enough. The grants come back signed
   * by each arbiter (its peer key), each naming one claimant quorum. `only`: with a committee in
   * force, only these seats are asked (the others hold the claim already).
   */
  claimFor: (txid: string, claimants: ReadonlyArray<import('./claim-proofs.js').ClaimantProof>, stateHashes: readonly string[], burns: ReadonlyArray<BurnClaim>, contract: Uint8Array, paths?: Readonly<Record<string, readonly Uint8Array[]>>, only?: readonly string[]) => Promise<import('./claims.js').ClaimResult & { grants: import('./claim-proofs.js').PeerGrant[] }>
  /**
   * A signer's check before it signs: the grants held for its quorum's own claim of every state
   * (and burnt ancestor) it validated, each signed by an arbiter of that state as this node counts
   * them, and of the claim of `nonce` (the vote's own; a receiver, which knows none, checks one claim's); why they do not suffice, or undefined.
   */
  checkGrants: (txid: string, quorumDid: string, stateHashes: readonly string[], burns: ReadonlyArray<Pick<BurnClaim, 'stateHash' | 'spender'>>, grants: ReadonlyArray<import('./claim-proofs.js').PeerGrant>, nonce?: string, fellows?: readonly string[]) => Promise<import('./claims.js').ClaimResult>
  /**
   * A seat's grant of its own quorum's claim as it votes: this node's table holds the states (and
   * burnt ancestors) for `txid` under the claim, and the grants, signed by its peer key, ride the
   * vote. None unless a committee in force seats this node.
   */
  grantOwn?: (txid: string, claimant: import('./claim-proofs.js').ClaimantProof, stateHashes: readonly string[], burns: ReadonlyArray<Pick<BurnClaim, 'stateHash' | 'spender'>>) => Promise<import('./claim-proofs.js').PeerGrant[]>
  /** gives the claim of `txid` up, signed (best effort: an arbiter not told asks the outcome later) */
  release: (txid: string, quorumDid: string, stateHashes: readonly string[], auth: import('./claim-proofs.js').ReleaseAuth) => Promise<void>
  /**
   * The sender's seal after the signatures (docs/protocol.md, "Seals"): each state (with its
   * holder: the transaction itself, or a burnt ancestor's burn block) sealed for `txid` at its
   * arbiters, showing the signers' consents (the secrets behind their claim nonces); `peers`, the
   * arbiters that granted the claims. Sealed when enough arbiters of every state sealed it; the
   * sealed grants come back signed by each arbiter's peer key. `presealed`: the signers' own seals
   * (their SIGN answers), counted first; when they suffice the answer comes at once and `grow`,
   * called when a receiver finds the certificate short, brings the other arbiters' seals (`before`
   * run first with the arbiters about to be asked: the claim made there when the votes' grants
   * skipped the claim round).
   */
  sealFor?: (txid: string, items: ReadonlyArray<{ stateHash: string, holder: string }>, consents: ReadonlyArray<import('./claim-proofs.js').SealConsent>, peers: readonly string[], presealed?: ReadonlyArray<import('./claim-proofs.js').PeerSeal>, before?: (others: readonly string[]) => Promise<void>) => Promise<import('./claims.js').ClaimResult & { seals: import('./claim-proofs.js').PeerSeal[], grow?: () => Promise<import('./claim-proofs.js').PeerSeal[]> }>
  /**
   * A signer's own seal as it signs: this node's table seals the states held for `txid` whose
   * records name the quorum's claim (`nonce`); the seals, signed by this node's peer key, ride the
   * quorum's SIGN answer (none where this node holds no such record).
   */
  sealSigned?: (txid: string, quorum: string, nonce: string, items: ReadonlyArray<{ stateHash: string, holder: string }>) => Promise<import('./claim-proofs.js').PeerSeal[]>
  /** A receiver's check: enough arbiters of each state, as this node counts them, sealed it to its holder. */
  checkSeals?: (items: ReadonlyArray<{ stateHash: string, holder: string }>, seals: ReadonlyArray<import('./claim-proofs.js').PeerSeal>) => Promise<import('./claims.js').ClaimResult & { seals?: import('./claim-proofs.js').PeerSeal[] }>
  /**
   * A receiver's check of the blocks before the one delivered: the seals carried for them count
   * first, then each state's arbiters, as this node counts them, are asked for their record of it;
   * `refused` names a state held for another transaction by at least 2f + 1 of its n arbiters (or
   * signed as sealed to another by f + 1) while fewer than q(n) sealed it to its holder (so that
   * holder's block was never certified); `unanswered` a state it cannot tell yet (a contest
   * against fewer than q(n) seals, or too few answers); `seals` the verified seals to the holders.
   */
  priorSeals?: (items: ReadonlyArray<{ stateHash: string, holder: string }>, o?: { byView?: boolean, carried?: ReadonlyArray<import('./claim-proofs.js').PeerSeal>, stake?: boolean }) => Promise<{ refused?: string, unanswered?: string, seals?: import('./claim-proofs.js').PeerSeal[] }>
}

/**
 * States of a transaction checked and published one by one in the DHT; a transaction with more
 * states (many FTs) has the rest spread by one batched gossip message (docs/protocol.md, "FTs").
 */
export const MARKER_DHT_STATES = 16

export type Verifier = SignatureVerifier

/**
 * How many verified envelopes a node remembers (their keys, about 150 bytes each: 2.5 MB at most),
 * shared by its sender, quorum and receiver roles; the least recently used go first. A receiver
 * adds some seven a payment (the block and the signers' pledge evidence), so a bound of 100,000
 * (15 MB) kept growing the heap of a receiving node for some 14,000 payments; what a later chain
 * carries again is mostly recent, and older states are remembered on disk (`cs-validated`).
 */
export const VERIFIED_MEMO = 16_384

export interface Clock { now: () => number }
export const systemClock: Clock = { now: () => Date.now() }

/**
 * A burnt ancestor to claim: its state, the burn block spending it, and `proof`, what an arbiter
 * checks before granting it (checkBurnProof: the envelopes, hex, of the state's block, the
 * owner-only blocks after it and the burn). Records written before proofs have none.
 */
export interface BurnClaim { stateHash: string, spender: string, proof?: string[] }
