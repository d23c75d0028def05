/**
 * A local test network: quorum and user nodes as `rbtnode run` processes on loopback, a fresh swarm
 * key, discovery off and explicit bootstrap. A first start sets it up (src/testnet/setup.ts); a
 * start in a directory that holds a network starts the same nodes again and repeats nothing.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { join, resolve } from 'node:path'
import { waitUntil } from '../util/wait-until.js'
import { LocalNode, type LocalNodeSpec } from './local-node.js'
import { joinQuorumNetwork, rbtBalance, setUpQuorums, setUpUsers } from './setup.js'
import { readState, runningSupervisor, STATE_FILE, SWARM_KEY_FILE, writeState, type NodeRecord, type TestnetState } from './state.js'
import { writeFileDurableSync } from '../util/durable-write.js'

export interface TestnetOptions {
  /** the network's directory */
  dir: string
  /** quorum nodes (at least 5; a transfer needs 5 signers) */
  quorums: number
  users: number
  /** API ports from basePort, swarm ports from basePort + 500 */
  basePort: number
  /** whole test RBT minted for each user DID (quorum DIDs: at least 10) */
  fund: number
  /** remove the network in dir and set up a new one */
  fresh: boolean
  /** extra environment of the node processes */
  env?: Record<string, string>
  /** aborting stops every node started so far and makes open() fail (Ctrl-C during set-up) */
  signal?: AbortSignal
}

export const DEFAULT_BASE_PORT = 21000
export const SWARM_PORT_OFFSET = 500
export const MIN_QUORUMS = 5
export const MAX_NODES = 100
/** RBT minted for each quorum DID when -fund is smaller */
export const QUORUM_MIN_FUND = 10

/** What `open` reports while it works. */
export interface TestnetProgress {
  phase: (name: string) => void
  phaseDone: (name: string, ms: number) => void
  nodesStarted: (done: number, total: number) => void
}

export const silentProgress: TestnetProgress = { phase: () => {}, phaseDone: () => {}, nodesStarted: () => {} }

export interface NodeRow {
  name: string
  role: 'quorum' | 'user'
  api: string
  peerId: string
  did: string
  /** free RBT, undefined when the node did not answer */
  balance?: number
  running: boolean
}

export interface TestnetSummary {
  dir: string
  restarted: boolean
  password: string
  nodes: NodeRow[]
  commands: { transfer: string, balance: string }
}

/** Options checked before anything starts; the message names the flag. */
export function checkOptions (o: TestnetOptions): void {
  if (!Number.isInteger(o.quorums) || o.quorums < MIN_QUORUMS) throw new RangeError(`-quorums must be a whole number of at least ${MIN_QUORUMS} (a transfer needs 5 quorum signatures), got ${o.quorums}`)
  if (!Number.isInteger(o.users) || o.users < 1) throw new RangeError(`-users must be a whole number of at least 1, got ${o.users}`)
  if (o.quorums + o.users > MAX_NODES) throw new RangeError(`at most ${MAX_NODES} nodes: -quorums plus -users is ${o.quorums + o.users}`)
  if (!Number.isInteger(o.fund) || o.fund < 1) throw new RangeError(`-fund must be a whole number of RBT of at least 1, got ${o.fund}`)
  if (!Number.isInteger(o.basePort) || o.basePort < 1024 || o.basePort + SWARM_PORT_OFFSET + MAX_NODES > 65535) throw new RangeError(`-basePort must be between 1024 and ${65535 - SWARM_PORT_OFFSET - MAX_NODES}, got ${o.basePort}`)
}

/**
 * The system's range of ephemeral ports (Linux: ip_local_port_range) when the network's ports fall
 * in it: the kernel hands those ports to outgoing connections, the nodes' own dials among them, so
 * one may be taken between the check that it is free and the node listening on it.
 */
export function ephemeralOverlap (basePort: number, nodes: number, rangeFile = '/proc/sys/net/ipv4/ip_local_port_range'): { low: number, high: number } | undefined {
  let text: string
  try { text = readFileSync(rangeFile, 'utf8') } catch { return undefined }
  const [low, high] = text.trim().split(/\s+/).map(Number)
  if (!Number.isInteger(low) || !Number.isInteger(high)) return undefined
  const last = basePort + SWARM_PORT_OFFSET + nodes - 1
  return basePort <= high && last >= low ? { low, high } : undefined
}

async function portFree (port: number): Promise<boolean> {
  return await new Promise((resolve) => {
    const s = createServer()
    s.once('error', () => { resolve(false) })
    s.listen(port, '127.0.0.1', () => { s.close(() => { resolve(true) }) })
  })
}

function swarmKeyText (): string {
  return `/key/swarm/psk/1.0.0/\n/base16/\n${randomBytes(32).toString('hex')}\n`
}

/** The commands to paste: a transfer from the first user to the second (or to itself) and a balance query. */
export function pasteCommands (nodes: readonly NodeRecord[], password: string): { transfer: string, balance: string } {
  const users = nodes.filter((n) => n.role === 'user')
  const from = users[0]
  const to = users[1] ?? users[0]
  return {
    transfer: `npx rbtnode transferrbt -port ${from.apiPort} -senderAddr ${from.did} -receiverAddr ${to.did} -rbtAmount 1 -privPWD ${password}`,
    balance: `npx rbtnode getaccountinfo -port ${to.apiPort} -did ${to.did}`
  }
}

export class Testnet {
  private exitHandler?: (node: LocalNode, code: number | null, signal: string | null) => void

  private constructor (readonly dir: string, readonly state: TestnetState, readonly nodes: LocalNode[], readonly restarted: boolean, private readonly env: Record<string, string>) {}

  /**
   * Starts the network of `o.dir`: sets it up on first start (or with `fresh`), otherwise starts
   * its nodes again. A failure part-way stops every node it started.
   */
  static async open (o: TestnetOptions, progress: TestnetProgress = silentProgress): Promise<Testnet> {
    checkOptions(o)
    const dir = resolve(o.dir)
    const running = runningSupervisor(dir)
    if (running !== undefined) throw new Error(`a test network is already running from ${dir} (process ${running.pid}): stop it with \`rbtnode testnet stop -p ${o.dir}\``)
    if (o.fresh && existsSync(dir)) {
      const names = readdirSync(dir)
      if (names.length > 0 && !names.includes(STATE_FILE)) throw new Error(`-fresh removes the test network in ${dir}, but that directory holds no ${STATE_FILE}: name an empty directory or a test network's`)
      rmSync(dir, { recursive: true, force: true })
    }
    mkdirSync(dir, { recursive: true })
    const old = readState(dir)
    if (old !== undefined && !old.complete) throw new Error(`the set-up of the test network in ${dir} did not finish: start again with -fresh`)
    const state: TestnetState = old ?? {
      version: 1,
      created: new Date().toISOString(),
      password: `testnet-${randomBytes(4).toString('hex')}`,
      fund: o.fund,
      basePort: o.basePort,
      complete: false,
      nodes: [
        ...Array.from({ length: o.quorums }, (_, i) => nodeRecord(dir, `quorum-${i + 1}`, 'quorum', i, o.basePort)),
        ...Array.from({ length: o.users }, (_, i) => nodeRecord(dir, `user-${i + 1}`, 'user', o.quorums + i, o.basePort))
      ]
    }
    for (const n of state.nodes) {
      for (const port of [n.apiPort, n.swarmPort]) {
        if (!await portFree(port)) throw new Error(`port ${port} on 127.0.0.1 (${n.name}) is in use: is another network or node running? Pick other ports with -basePort`)
      }
    }
    if (old === undefined) {
      writeFileDurableSync(join(dir, SWARM_KEY_FILE), swarmKeyText(), { mode: 0o600 })
      writeState(dir, state)
    }
    const net = new Testnet(dir, state, state.nodes.map((r) => new LocalNode(r)), old !== undefined, o.env ?? {})
    const onAbort = (): void => { void net.stop() }
    o.signal?.addEventListener('abort', onAbort)
    try {
      if (o.signal?.aborted === true) throw new Error('stopped before the network started')
      if (old === undefined) {
        await net.startAll(progress)
        await net.setUp(progress)
      } else {
        await net.startAll(progress, true)
      }
    } catch (e) {
      await net.stop()
      throw o.signal?.aborted === true ? new Error('stopped during set-up: every node started so far is stopped') : e
    } finally {
      o.signal?.removeEventListener('abort', onAbort)
    }
    return net
  }

  get quorumNodes (): LocalNode[] { return this.nodes.filter((n) => n.spec.role === 'quorum') }
  get userNodes (): LocalNode[] { return this.nodes.filter((n) => n.spec.role === 'user') }

  /** Called when a node exits that no stop asked for (the others keep running). */
  onNodeExit (handler: (node: LocalNode, code: number | null, signal: string | null) => void): void { this.exitHandler = handler }

  /**
   * Starts every node at once. With `reconnect` (a restart), each node is connected again to its
   * peers as soon as it and they are up, while the others are still starting.
   */
  private async startAll (progress: TestnetProgress, reconnect = false): Promise<void> {
    const name = this.restarted ? `starting the ${this.nodes.length} nodes of ${this.dir}` : `starting ${this.quorumNodes.length} quorum and ${this.userNodes.length} user nodes`
    const t0 = Date.now()
    progress.phase(name)
    let done = 0
    progress.nodesStarted(0, this.nodes.length)
    const swarmKeyPath = join(this.dir, SWARM_KEY_FILE)
    const starts = new Map(this.nodes.map((n, i) => [n, (async () => {
      mkdirSync(n.spec.dir, { recursive: true })
      await n.start({ swarmKeyPath, faucet: i === 0, env: this.env }, (code, signal) => { this.exitHandler?.(n, code, signal) })
      progress.nodesStarted(++done, this.nodes.length)
    })()]))
    const connects = reconnect ? this.nodes.map(async (n) => { await this.reconnect(n, starts) }) : []
    // a failed start is reported by the starts; the connects that waited for it add nothing
    for (const c of connects) c.catch(() => {})
    await Promise.all(starts.values())
    progress.phaseDone(name, Date.now() - t0)
    if (!reconnect) return
    const t1 = Date.now()
    const connected = 'nodes connected again'
    progress.phase(connected)
    await Promise.all(connects)
    progress.phaseDone(connected, Date.now() - t1)
  }

  private async setUp (progress: TestnetProgress): Promise<void> {
    const s = this.state
    const phase = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
      const t0 = Date.now()
      progress.phase(name)
      const v = await work()
      progress.phaseDone(name, Date.now() - t0)
      return v
    }
    const quorums = this.quorumNodes
    const users = this.userNodes
    // a quorum pledges for what users transfer: it holds at least as much as a user DID
    const quorumFund = Math.max(QUORUM_MIN_FUND, s.fund)
    const quorumDids = await phase(`quorum DIDs created, funded with ${quorumFund} RBT, pledged and set up`, async () => await setUpQuorums(quorums, s.password, quorumFund))
    await phase('one quorum list on every node', async () => { await Promise.all(this.nodes.map(async (n) => { await joinQuorumNetwork(n, quorums, quorumDids) })) })
    const userDids = await phase(`user DIDs created and funded with ${s.fund} RBT`, async () => await setUpUsers(users, s.password, s.fund))
    const dids = [...quorumDids, ...userDids]
    for (const [i, n] of this.nodes.entries()) {
      s.nodes[i].peerId = n.peerId
      s.nodes[i].did = dids[i]
    }
    s.complete = true
    writeState(this.dir, s)
  }

  /**
   * After a restart: the nodes start together, so their dials at start may find the seed (or each
   * other) not listening yet. Once `n` and its peers are up, `n` dials the seed again and a user
   * node the other user nodes, so a transfer finds its peers at once.
   */
  private async reconnect (n: LocalNode, starts: Map<LocalNode, Promise<void>>): Promise<void> {
    const seed = this.nodes[0]
    const peers = [...(n !== seed ? [seed] : []), ...(n.spec.role === 'user' ? this.userNodes.filter((u) => u !== n) : [])]
    if (peers.length === 0) return
    await Promise.all([n, ...peers].map(async (p) => { await starts.get(p) }))
    await n.client.call('bootstrapAdd', { body: { peers: peers.map((p) => p.multiaddr) } })
    // the dials run in the background: wait until they are connections
    await waitUntil(async () => {
      const connected = new Set((await n.client.call('nodeStatus')).result?.peers ?? [])
      return peers.every((p) => connected.has(p.peerId))
    }, { timeoutMs: 30_000, intervalMs: 50, what: `${n.spec.name} to connect to its peers` })
  }

  /** The table's rows: every node with its balance as it answers now. */
  async summary (): Promise<TestnetSummary> {
    const nodes = await Promise.all(this.nodes.map(async (n, i) => {
      const r = this.state.nodes[i]
      const balance = n.running ? await rbtBalance(n.client, r.did).catch(() => undefined) : undefined
      return { name: r.name, role: r.role, api: n.url, peerId: r.peerId, did: r.did, balance, running: n.running }
    }))
    return { dir: this.dir, restarted: this.restarted, password: this.state.password, nodes, commands: pasteCommands(this.state.nodes, this.state.password) }
  }

  /** Stops every node (gracefully, in parallel). */
  async stop (): Promise<void> {
    await Promise.all(this.nodes.map(async (n) => { await n.close().catch(() => {}) }))
  }
}

function nodeRecord (dir: string, name: string, role: 'quorum' | 'user', i: number, basePort: number): NodeRecord {
  const spec: LocalNodeSpec = { name, role, index: i, dir: join(dir, name), apiPort: basePort + i, swarmPort: basePort + SWARM_PORT_OFFSET + i }
  return { ...spec, peerId: '', did: '' }
}
