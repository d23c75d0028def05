import { join } from 'node:path'
import type { ChainSource } from '../../consensus/chain-sync.js'
import type { ScCode, ScRunner } from '../../consensus/smart-contract.js'
import type { SignPrompt } from '../../wallet/did-crypto.js'
import { sha3Hex } from '../../tokenchain/hash.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Component, Factory } from '../component/component.js'
import type { IdentityComponent } from '../identity/identity-component.js'
import type { MetricsComponent } from '../metrics/metrics-component.js'
import type { SigningComponent } from '../signing/signing-component.js'
import type { StorageComponent } from '../storage/storage-component.js'
import type { TokensComponent } from '../tokens/tokens-component.js'
import { transferAnnouncementBatcher, type Batcher, type TransferAnnouncement } from './announcement-batcher.js'
import { createConsensusApi } from './consensus-api.js'
import type { ConsensusService } from './consensus-service.js'
import type { Faucet } from './faucet.js'
import { consensusLedger } from './ledger-adapter.js'
import { createOperatorApi } from './operator-api.js'
import { QuorumRegistry } from './quorum-registry.js'
import type { NodeSpentMarkers } from './spent-markers.js'
import type { NodeStateClaims } from './state-claims.js'
import type { ArbiterCommittee } from './arbiter-committee.js'
import { ClaimTable } from '../../consensus/claims.js'
import { isNftTokenType } from '../../consensus/nft.js'
import type { ConsensusMethods } from './consensus-network.js'
import type { RpcClient } from '../../p2p/rpc.js'
import type { Network } from '../component/component.js'

/** Gossipsub topic where senders announce committed transfers (spent token states). */
export const TXN_TOPIC = '/rbt/txn/1.0.0'
const FAUCET_KEY = (testNet: boolean): string => `/rbt/faucet/${testNet ? 'testnet' : 'mainnet'}`

/** Test builds only (RBTNODE_TEST_HOOKS=1): RBTNODE_FAULT=<step> kills the process right after that durable step. */
function faultHook (): ((step: string) => void) | undefined {
  if (process.env.RBTNODE_TEST_HOOKS !== '1' || process.env.RBTNODE_FAULT === undefined) return undefined
  const steps = new Set(process.env.RBTNODE_FAULT.split(','))
  return (step) => { if (steps.has(step)) { process.stderr.write(`fault hook: killed at ${step}\n`); process.kill(process.pid, 'SIGKILL') } }
}

const env = (name: string): number | undefined => process.env[name] !== undefined ? Number(process.env[name]) : undefined

/** An NFT or contract state committed by this node; a listener answers whether the token is its own. */
export type NftCommitted = (nftId: string, blockId: string, owner: string, txid: string) => Promise<boolean>

/** Transfers and quorum duty (docs/architecture.md, "Transfers"). */
export interface ConsensusComponent extends Component {
  registry: QuorumRegistry
  /** the running service; NOT_RUNNING before the core starts */
  require: () => ConsensusService
  current: () => ConsensusService | undefined
  /** committed NFT and contract transactions: later components are asked first, the first that owns the token takes it */
  onNftCommitted: (listener: NftCommitted) => void
  /** an NFT delivered to a DID of this node (the receiver's side of a transfer): its files can be fetched */
  onNftReceived: (listener: (nftId: string, receiver: string) => void) => void
  /** what smart contracts lend consensus: their code (sent to quorums) and the engine quorums run them with */
  contracts: { code?: (scId: string) => Promise<ScCode>, engine?: ScRunner }
  /** where a quorum fetches the spending block a transaction announcement names (chain sync lends it) */
  chainSourceOf?: (peer: string) => Pick<ChainSource, 'chain'> | undefined
  /** told of the tokens each transaction announcement names, and by whom (chain sync archives them) */
  onAnnouncedTokens: (listener: (from: string, tokens: string[]) => void) => void
  /**
   * told of token states reported spent by another transaction: the states each announcement says
   * it spent (`from`: the announcer, which serves the chains), and the tokens of a transfer of this
   * node that a quorum refused as a double spend (no `from`); chain sync checks and drops them
   */
  onSpentElsewhere: (listener: (claims: Array<{ tokenId: string, blockId?: string }>, why: string, from?: string) => void) => void
  /** publishes one announcement on the transaction topic (the core must run) */
  publishTxn: (m: TransferAnnouncement) => Promise<void>
}

type Needs = { storage: StorageComponent, identity: IdentityComponent, signing: SigningComponent, tokens: TokensComponent, metrics: MetricsComponent }

export const consensusComponent: Factory<Needs, ConsensusComponent> = ({ base, storage, identity: idc, signing, tokens, metrics }) => {
  const { options, log } = base
  const { store, config, tokenLedger, repos } = storage
  const identity = idc.identity
  const registry = new QuorumRegistry(config, store, join(base.layout.root, 'quorum.secret'))
  const nftListeners: NftCommitted[] = []
  const nftReceivedListeners: Array<(nftId: string, receiver: string) => void> = []
  const tokenListeners: Array<(from: string, tokens: string[]) => void> = []
  const spentListeners: Array<(claims: Array<{ tokenId: string, blockId?: string }>, why: string, from?: string) => void> = []
  const spentElsewhere = (claims: Array<{ tokenId: string, blockId?: string }>, why: string, from?: string): void => {
    for (const l of spentListeners) {
      try { l(claims, why, from) } catch (e) { log.debug(`spent-state listener: ${errorMessage(e)}`) }
    }
  }
  let net: Network | undefined
  let svc: ConsensusService | undefined
  let markers: NodeSpentMarkers | undefined
  let claims: NodeStateClaims | undefined
  let arbiterView: { stop: () => void } | undefined
  let committee: ArbiterCommittee | undefined
  // the tokens this node's own arbiter seats stake: kept out of transfers and pledges
  let staked: () => ReadonlySet<string> = () => new Set()
  let faucet: Faucet | undefined
  let txnBatcher: Batcher<TransferAnnouncement> | undefined
  const require = (): ConsensusService => {
    if (svc === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started: call GET /svc/v1/node/start first')
    return svc
  }
  const requireNet = (): { host: Network['host'], rpc: RpcClient<ConsensusMethods> } => {
    if (net === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started: call GET /svc/v1/node/start first')
    return net
  }
  const publishTxn = async (m: TransferAnnouncement): Promise<void> => {
    await requireNet().host.publish(TXN_TOPIC, new TextEncoder().encode(JSON.stringify({ txid: '', ...m })))
  }

  /** Asks the test network's faucet (this node, or the peer named by the faucet DHT record). */
  const requestFaucet = async (did: string, count: number, prompt: SignPrompt): Promise<{ txid: string, count: number }> => {
    // the asker proves it controls the DID before anything is asked of the faucet
    const signer = await identity.signerFor(did, prompt)
    await signer.pvtSign(sha3Hex(new TextEncoder().encode(`faucet|${did}|${count}`)))
    if (faucet !== undefined) return await faucet.serve(did, count)
    const { host, rpc } = requireNet()
    let peer: string
    try {
      peer = (JSON.parse(new TextDecoder().decode(await host.getValue(FAUCET_KEY(options.testNet), { timeoutMs: 10_000 }))) as { peerId: string }).peerId
    } catch (e) {
      throw new RbtError(ErrorCode.NOT_FOUND, `no faucet found on this network (${errorMessage(e)}); a faucet is a test-network node started with -faucet`)
    }
    return await rpc.call(peer, 'faucet.request', { did, count }, { timeoutMs: 120_000 })
  }

  const operator = createOperatorApi({
    consensus: require,
    repos,
    localDids: async () => await identity.list(),
    ledger: () => consensusLedger(store, tokenLedger, repos, () => staked()),
    verifier: idc.verifier(false),
    didRecord: async (did) => await identity.record(did),
    twoStep: signing.signing,
    claims: () => claims === undefined || markers === undefined ? undefined : { records: async (h) => await claims!.table.records(h), markers: async (h) => await markers!.knownMany(h) },
    seats: { committee: () => committee, quorumSigner: (did) => svc?.quorumSignerOf(did), selfPeer: () => net?.host.peerId }
  })

  const self: ConsensusComponent = {
    registry,
    // the node secret is read (or a damaged one handled) before anything unseals with it
    start: async () => {
      const notice = await registry.open()
      if (notice !== undefined) log.warn(notice)
    },
    require,
    current: () => svc,
    onNftCommitted: (l) => { nftListeners.unshift(l) },
    onNftReceived: (l) => { nftReceivedListeners.push(l) },
    contracts: {},
    onAnnouncedTokens: (l) => { tokenListeners.push(l) },
    onSpentElsewhere: (l) => { spentListeners.push(l) },
    publishTxn,
    api: {
      consensus: createConsensusApi({
        service: require,
        registry,
        repos,
        identity: { record: async (did) => await identity.record(did), isLocal: async (did) => await identity.isLocal(did) },
        twoStep: signing.signing,
        remoteQuorumStatus: async (did) => {
          const { rpc } = requireNet()
          const { peerId } = await identity.resolvePeer(did)
          try {
            return (await rpc.call(peerId, 'quorum.status', { did }, { timeoutMs: 10_000 })).setup
          } catch (e) {
            throw new RbtError(ErrorCode.PEER_UNREACHABLE, `Quorum Connection Error: ${errorMessage(e)}`)
          }
        },
        requestFaucet,
        selfTransfer: async (did) => await operator.selfTransfer(did, {})
      }),
      operator
    },
    rpcMethods: async () => {
      const [netMod, markersMod, claimsMod] = await Promise.all([import('./consensus-network.js'), import('./spent-markers.js'), import('./state-claims.js')])
      return {
        ...netMod.consensusRpcHandlers(require),
        ...markersMod.spentMarkerRpcHandlers(() => markers),
        ...claimsMod.stateClaimRpcHandlers(() => claims, () => claims?.status),
        ...(await import('./arbiter-rpc.js')).arbiterRpcHandlers(() => committee)
      }
    },
    // recovery starts with the network part and asks quorums and receivers by peer id at once: the
    // DID network resolves their peers, the known addresses (discovery) let the first dials go out
    networkAfter: ['identity', 'discovery'],
    // sender, quorum and receiver roles over the rpc, spent markers, finality gossip
    startNetwork: async (n) => {
      const { host } = n
      const [svcMod, netMod, markersMod, faucetMod, claimsMod] = await Promise.all([
        import('./consensus-service.js'), import('./consensus-network.js'), import('./spent-markers.js'), import('./faucet.js'), import('./state-claims.js')
      ])
      net = n
      const verifier = idc.verifier()
      const transport = netMod.consensusTransport(require, () => net?.rpc, {
        isLocal: async (did) => await identity.isLocal(did),
        peerOf: async (did) => (await identity.resolvePeer(did)).peerId
      })
      // committed transfers are announced in merged messages (the states each spent, the tokens each moved)
      const batcher = transferAnnouncementBatcher({ publish: publishTxn, onError: (e) => { log.debug(`announcing transactions: ${errorMessage(e)}`) } })
      txnBatcher = batcher
      const m = markersMod.nodeSpentMarkers({
        host: () => net?.host,
        rpc: () => net?.rpc,
        verifier,
        signerFor: (did) => service.quorumSignerOf(did),
        local: store.collection('spent-markers'),
        dhtTimeoutMs: env('RBTNODE_MARKER_TIMEOUT_MS'),
        log: log.child('markers'),
        onConflict: (stateHash, held, other) => {
          void svc?.doubleSpends.flag({ tokenId: '', state: stateHash, stateHash, kind: 'markers', spenders: [held.txid, other.txid], markers: [held, other], seenBy: 'markers' })
        }
      })
      markers = m
      host.subscribe(markersMod.SPENT_TOPIC, async (msg) => { await m.receive(msg.data).catch(() => {}) })
      // claims of the states a transaction spends, before any signature (docs/protocol.md, "Claims"):
      // the arbiters are counted from every peer this node has been connected to (kept on disk)
      const view = new claimsMod.ArbiterView(store.collection('arbiter-view'), host.peerId, log.child('claims'), () => host.connectedPeerSet(), env('RBTNODE_ARBITER_FORGET_MS'))
      await view.load()
      arbiterView = view
      // a Kubo peer (-kubo) answers none of the claims: it is no arbiter
      const seen = (p: string): void => { void host.peerAddresses(p).then(async (a) => { if (!host.isForeignPeer(p)) await view.seen(p, a) }).catch(() => {}) }
      host.onPeerConnect(seen)
      host.onPeerDisconnect((p) => { if (!host.isForeignPeer(p)) void view.seen(p).catch(() => {}) })
      host.onForeignPeer((p) => { void view.forget(p).catch(() => {}) })
      for (const p of host.connectedPeers()) seen(p)
      // conflicting certificates kept as evidence, and the arbiters they prove granted twice distrusted
      const certificates = await (await import('./certificate-watch.js')).nodeCertificateEvidence({ ledger: consensusLedger(store, tokenLedger, repos, () => staked()), log: log.child('certificates'), observe: metrics.metrics.consensus })
      // the arbiter committee (docs/protocol.md, "The arbiter committee"): seats bought with a stake,
      // counted as the claims' arbiters once it reaches its minimum; until then the view's peers
      const committeeMod = await import('./arbiter-committee.js')
      let claimsRef: NodeStateClaims | undefined
      const com = new committeeMod.ArbiterCommittee({
        col: store.collection('arbiter-registrations'),
        host: () => net === undefined
          ? undefined
          : {
              peerId: host.peerId,
              signAsPeer: async (d) => await host.signAsPeer(d),
              addrs: () => host.multiaddrs(),
              learn: async (peer, addrs) => { await host.learnPeer({ peerId: peer, multiaddrs: addrs }) },
              connected: () => host.connectedPeers().filter((p) => !host.isForeignPeer(p))
            },
        rpc: () => net?.rpc as never,
        verifier,
        verifyPeer: async (peer, data, sig) => (await import('../../p2p/peer-signature.js')).verifyPeerSignature(peer, data, sig),
        // a stake is probed wherever the node counts arbiters, a node that requires the committee too
        probe: async (items, o) => await claimsRef?.priorSeals?.(items, { ...o, stake: true }) ?? {},
        distrusted: (p) => certificates.distrusted?.(p) === true,
        log: log.child('arbiters'),
        testNet: options.testNet === true,
        maturityMs: env('RBTNODE_ARBITER_MATURITY_MS') ?? committeeMod.ARBITER_MATURITY_MS,
        graceMs: env('RBTNODE_ARBITER_GRACE_MS') ?? committeeMod.ARBITER_GRACE_MS,
        recheckMs: env('RBTNODE_ARBITER_RECHECK_MS') ?? committeeMod.ARBITER_RECHECK_MS,
        pullMs: env('RBTNODE_ARBITER_PULL_MS') ?? committeeMod.ARBITER_PULL_MS,
        // lower in tests only: every charter heavier than this travels apart (`arbiters.charter`)
        ...(env('RBTNODE_ARBITER_CHARTER_INLINE_BYTES') !== undefined ? { charterInlineBytes: env('RBTNODE_ARBITER_CHARTER_INLINE_BYTES')! } : {})
      })
      await com.load()
      committee = com
      host.onPeerConnect((p) => { if (!host.isForeignPeer(p)) void com.pullFrom(p).catch(() => {}) })
      const c = claimsMod.nodeStateClaims({
        committee: () => com.seats(),
        committeeAddrs: (p) => com.addrsOf(p),
        host: () => net?.host,
        rpc: () => net?.rpc,
        table: new ClaimTable(claimsMod.claimStoreOn(store), { now: () => Date.now() }),
        view,
        markers: m,
        outcome: async (q, tx) => await require().quorum.claimOutcome(q, tx),
        verifier,
        peerOf: async (did) => (await identity.resolvePeer(did)).peerId,
        quorumSigner: (did) => svc?.quorumSignerOf(did),
        timeoutMs: env('RBTNODE_CLAIM_TIMEOUT_MS'),
        log: log.child('claims'),
        certificates,
        requireCommittee: options.requireCommittee
      })
      claims = c
      claimsRef = c
      com.start()
      staked = () => com.stakedBy(host.peerId)
      const service: ConsensusService = new svcMod.ConsensusService({
        ledger: consensusLedger(store, tokenLedger, repos, () => staked()),
        verifier,
        identity,
        registry,
        transport,
        markers: m,
        claims: c,
        selfPeer: () => host.peerId,
        log,
        sweepIntervalMs: env('RBTNODE_SWEEP_MS'),
        trustOwnQuorumList: options.trustOwnQuorumList,
        pledgePeriodMs: env('RBTNODE_PLEDGE_PERIOD_MS'),
        staleVoteMs: env('RBTNODE_STALE_VOTE_MS'),
        fault: faultHook(),
        observe: metrics.metrics.consensus,
        waitingFor: (did) => signing.signing.waitingFor(did),
        onDoubleSpent: (states, reason) => { spentElsewhere(states, `a quorum refusing a transfer: ${reason}`) },
        onReceived: (_txid, receiver, received) => {
          for (const t of received) {
            if (!isNftTokenType(t.tokenType)) continue
            for (const l of nftReceivedListeners) {
              try { l(t.tokenId, receiver) } catch (e) { log.debug(`NFT received: ${errorMessage(e)}`) }
            }
          }
        },
        onNftCommitted: (nftId, blockId, owner, txid) => {
          void (async () => { for (const l of nftListeners) if (await l(nftId, blockId, owner, txid)) return })()
            .catch((e) => { log.debug(`after ${txid}: ${errorMessage(e)}`) })
          // fullnodes learn NFT and contract states too (a deploy spends no earlier state)
          batcher.add([{ spent: [], tokens: [nftId] }])
        },
        scCode: async (scId) => {
          if (self.contracts.code === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'smart contracts are not served by this node')
          return await self.contracts.code(scId)
        },
        contracts: self.contracts.engine,
        onCommitted: (txid, spent) => {
          const moved = [...new Set(spent.map((s) => s.slice(0, s.indexOf('@') < 0 ? s.length : s.indexOf('@'))))]
          batcher.add([{ spent, tokens: moved }])
          service.quorum.tokensMovedOn(spent).catch(() => {})
        },
        faucet: options.faucet ? async (did, count) => await faucet!.serve(did, count) : undefined
      })
      // a transaction announcement names the tokens it moved (fullnodes archive them) and the states it spent (quorums release their pledges)
      host.subscribe(TXN_TOPIC, async (msg) => {
        try {
          const a = JSON.parse(new TextDecoder().decode(msg.data)) as { spent?: unknown, tokens?: unknown }
          const from = msg.from
          if (Array.isArray(a.tokens) && from !== undefined && a.tokens.every((x) => typeof x === 'string')) for (const l of tokenListeners) l(from, a.tokens as string[])
          // a pledge is released only on a valid spending block: from this node's ledger, else fetched from the announcer
          const source = from !== undefined ? self.chainSourceOf?.(from) : undefined
          if (Array.isArray(a.spent) && a.spent.every((x) => typeof x === 'string')) {
            if (from !== undefined && from !== host.peerId) {
              const claims = (a.spent as string[]).filter((s) => s.includes('@')).slice(0, 10_000).map((s) => ({ tokenId: s.slice(0, s.indexOf('@')), blockId: s.slice(s.indexOf('@') + 1) }))
              if (claims.length > 0) spentElsewhere(claims, `a spent-state announcement of ${from}`, from)
            }
            await service.quorum.tokensMovedOn(a.spent as string[], source)
          }
        } catch (e) {
          log.debug(`ignoring a transaction announcement: ${errorMessage(e)}`)
        }
      })
      svc = service
      await service.start()
      if (options.faucet) {
        if (!options.testNet) log.warn('-faucet ignored: a faucet runs only on a test network (-testNet)')
        else {
          faucet = new faucetMod.Faucet({ identity, tokens: tokens.tokens, registry, config, consensus: require, log: log.child('faucet') })
          const did = await faucet.did()
          const publish = (): void => {
            host.putValue(FAUCET_KEY(true), new TextEncoder().encode(JSON.stringify({ peerId: host.peerId, did })), { timeoutMs: 15_000 })
              .catch((e) => { log.debug(`faucet record: ${errorMessage(e)}`) })
          }
          setTimeout(publish, 1500).unref()
          setInterval(publish, 10 * 60_000).unref()
          log.info(`faucet ready: DID ${did}`)
        }
      }
    },
    stopNetwork: () => {
      arbiterView?.stop()
      committee?.stop()
      txnBatcher?.flush()
      svc?.stop()
    }
  }
  return self
}
