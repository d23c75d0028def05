/**
 * Network namespaces for tests that need multicast (mDNS discovery). A node with discovery on sends
 * multicast, so it may only run inside a namespace the test made: there only the namespace's own
 * loopback carries the packets, and nothing reaches the machine's LAN or the other tests' nodes.
 *
 *   const ns = await createNetns('discovery')     // lo up, multicast on, 224.0.0.0/4 via lo
 *   const node = await new NodeProcess({ netns: ns, extraArgs: ['-testNet'] }).start()
 *   ...
 *   await ns.dispose()                            // kills what was started inside, deletes it
 *
 * Making namespaces needs root and iproute2. Suites call `requireNetns(this)` in `before`: it skips
 * them when namespaces are unavailable, except on CI (`CI` set), where it fails instead.
 */
import { execFile, spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process'
import { promisify } from 'node:util'

const execFileP = promisify(execFile)
const PREFIX = 'rbt-'

export interface Netns {
  /** the namespace's name, as `ip netns` knows it */
  readonly name: string
  /** argv that runs `command args` inside: ['netns', 'exec', name, command, ...args] for `ip` */
  execArgs: (command: string, args: string[]) => string[]
  /**
   * Spawns `command args` inside the namespace (`ip netns exec`, which replaces itself with the
   * command: the child's pid is the command's). dispose() kills it if it is still running.
   */
  spawn: (command: string, args: string[], opts?: SpawnOptions) => ChildProcess
  /** Runs a command inside and returns its stdout; rejects on a non-zero exit. */
  run: (command: string, args: string[]) => Promise<string>
  /** Kills every process started in it (and any other left inside), then deletes it. Idempotent. */
  dispose: () => Promise<void>
}

let counter = 0
const live = new Set<string>()
let exitHookInstalled = false

async function ip (args: string[]): Promise<string> {
  const { stdout } = await execFileP('ip', args, { timeout: 10_000 })
  return stdout
}

/** Processes inside a namespace, by `ip netns pids`. */
function pidsSync (name: string): number[] {
  const r = spawnSync('ip', ['netns', 'pids', name], { encoding: 'utf8', timeout: 5000 })
  if (r.status !== 0) return []
  return r.stdout.split(/\s+/).filter((s) => /^\d+$/.test(s)).map(Number)
}

function killAllSync (name: string): void {
  for (const pid of pidsSync(name)) {
    try { process.kill(pid, 'SIGKILL') } catch {}
  }
}

/** Synchronous best-effort removal, for the exit hook and for namespaces left by dead test runs. */
function destroySync (name: string): void {
  killAllSync(name)
  spawnSync('ip', ['netns', 'del', name], { timeout: 5000 })
  live.delete(name)
}

function installExitHook (): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on('exit', () => { for (const name of [...live]) destroySync(name) })
}

function alive (pid: number): boolean {
  try { process.kill(pid, 0); return true } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM' }
}

/** Deletes namespaces this helper made in test runs whose process is gone (killed runners). */
async function removeOrphans (): Promise<void> {
  let list = ''
  try { list = await ip(['netns', 'list']) } catch { return }
  for (const line of list.split('\n')) {
    const name = line.trim().split(/\s+/)[0] ?? ''
    const m = /^rbt-.+-(\d+)-\d+$/.exec(name)
    if (m === null) continue
    const pid = Number(m[1])
    if (pid !== process.pid && !alive(pid)) destroySync(name)
  }
}

let availability: Promise<{ ok: boolean, reason: string }> | undefined

/** Whether this process can make network namespaces (root, iproute2, a probe works); tried once. */
export async function netnsAvailable (): Promise<boolean> {
  return (await netnsAvailability()).ok
}

export async function netnsAvailability (): Promise<{ ok: boolean, reason: string }> {
  availability ??= (async () => {
    if (process.platform !== 'linux') return { ok: false, reason: `network namespaces need Linux, this is ${process.platform}` }
    if (process.getuid?.() !== 0) return { ok: false, reason: 'network namespaces need root' }
    try {
      await ip(['-V'])
    } catch (e) {
      return { ok: false, reason: `iproute2 (ip) is not available: ${(e as Error).message}` }
    }
    try {
      const probe = await createNetns('probe')
      await probe.dispose()
      return { ok: true, reason: '' }
    } catch (e) {
      return { ok: false, reason: `cannot make a network namespace: ${(e as Error).message}` }
    }
  })()
  return await availability
}

/**
 * For a suite's `before`: skips the suite when namespaces are unavailable, or fails it when the
 * CI variable is set (CI runs as root and must run these suites).
 */
export async function requireNetns (ctx: Mocha.Context): Promise<void> {
  const a = await netnsAvailability()
  if (a.ok) return
  if (process.env.CI !== undefined && process.env.CI !== '') {
    throw new Error(`this suite needs a network namespace and CI must run it, but ${a.reason}`)
  }
  ctx.skip()
}

/**
 * A fresh namespace `rbt-<label>-<pid>-<n>`: loopback up with multicast on and a route for
 * 224.0.0.0/4 over it, so that mDNS between processes inside works and stays inside.
 */
export async function createNetns (label: string): Promise<Netns> {
  const safe = label.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 16) || 'ns'
  const name = `${PREFIX}${safe}-${process.pid}-${++counter}`
  if (counter === 1) await removeOrphans()
  installExitHook()
  await ip(['netns', 'add', name])
  live.add(name)
  try {
    await ip(['-n', name, 'link', 'set', 'lo', 'up'])
    await ip(['-n', name, 'link', 'set', 'lo', 'multicast', 'on'])
    await ip(['-n', name, 'route', 'add', '224.0.0.0/4', 'dev', 'lo'])
  } catch (e) {
    destroySync(name)
    throw e
  }

  const children = new Set<ChildProcess>()
  let disposed = false
  const execArgs = (command: string, args: string[]): string[] => ['netns', 'exec', name, command, ...args]
  return {
    name,
    execArgs,
    spawn: (command, args, opts = {}) => {
      if (disposed) throw new Error(`namespace ${name} is disposed`)
      const child = spawn('ip', execArgs(command, args), opts)
      children.add(child)
      child.on('exit', () => { children.delete(child) })
      return child
    },
    run: async (command, args) => {
      const { stdout } = await execFileP('ip', execArgs(command, args), { timeout: 30_000 })
      return stdout
    },
    dispose: async () => {
      if (disposed) return
      disposed = true
      const exits = [...children].map(async (c) => await new Promise<void>((resolve) => {
        if (c.exitCode !== null || c.signalCode !== null) { resolve(); return }
        c.once('exit', () => { resolve() })
        c.kill('SIGKILL')
      }))
      await Promise.all(exits)
      killAllSync(name)
      try {
        await ip(['netns', 'del', name])
      } catch {
        destroySync(name)
      }
      live.delete(name)
    }
  }
}

/** One member of a LAN made by createLan: its namespace and address on the bridge. */
export interface LanMember {
  readonly ns: Netns
  /** the member's IPv4 address on the LAN */
  readonly ip: string
  /** the bridge's end of its veth pair (in the switch namespace) */
  readonly port: string
}

export interface Lan {
  /** the namespace that holds the bridge (no process runs there) */
  readonly switchNs: Netns
  readonly members: readonly LanMember[]
  /** Takes a member's port on the bridge down (its cable pulled): it reaches nobody and nobody reaches it. */
  cut: (i: number) => Promise<void>
  /** Brings a member's port back up. */
  reconnect: (i: number) => Promise<void>
  /** Drops what members i and j send each other (a blackhole route on both sides); the rest of the LAN is unaffected. */
  separate: (i: number, j: number) => Promise<void>
  /** Removes what separate(i, j) added. */
  join: (i: number, j: number) => Promise<void>
  /** Deletes every namespace (members' processes are killed). */
  dispose: () => Promise<void>
}

/**
 * `count` namespaces joined by a bridge in a switch namespace of their own: member i has a veth
 * pair whose one end (`eth0`, 10.<net>.0.<i+2>/24) is in its namespace and whose other end is a port
 * of the bridge. Nothing of the machine's own network is touched; the LAN reaches nothing outside.
 * Links can be cut and pairs separated at any time (partitions) and healed again.
 */
export async function createLan (label: string, count: number): Promise<Lan> {
  if (count < 1 || count > 250) throw new Error(`a LAN has 1 to 250 members, not ${count}`)
  const made: Netns[] = []
  try {
    const sw = await createNetns(`${label}-sw`)
    made.push(sw)
    await ip(['-n', sw.name, 'link', 'add', 'br0', 'type', 'bridge'])
    await ip(['-n', sw.name, 'link', 'set', 'br0', 'up'])
    const members: LanMember[] = []
    for (let i = 0; i < count; i++) {
      const ns = await createNetns(`${label}-${i}`)
      made.push(ns)
      const port = `p${i}`
      const addr = `10.77.0.${i + 2}`
      await ip(['link', 'add', port, 'netns', sw.name, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns.name])
      await ip(['-n', sw.name, 'link', 'set', port, 'master', 'br0', 'up'])
      await ip(['-n', ns.name, 'addr', 'add', `${addr}/24`, 'dev', 'eth0'])
      await ip(['-n', ns.name, 'link', 'set', 'eth0', 'up'])
      members.push({ ns, ip: addr, port })
    }
    const member = (i: number): LanMember => {
      const m = members[i]
      if (m === undefined) throw new Error(`no LAN member ${i}`)
      return m
    }
    const route = async (verb: 'add' | 'del', i: number, j: number): Promise<void> => {
      const a = member(i)
      const b = member(j)
      for (const [from, to] of [[a, b], [b, a]] as const) {
        try {
          await ip(['-n', from.ns.name, 'route', verb, 'blackhole', `${to.ip}/32`])
        } catch (e) {
          // adding what is there, or deleting what is gone, is not an error
          if (!/File exists|No such process/.test((e as { stderr?: string }).stderr ?? (e as Error).message)) throw e
        }
      }
    }
    return {
      switchNs: sw,
      members,
      cut: async (i) => { await ip(['-n', sw.name, 'link', 'set', member(i).port, 'down']) },
      reconnect: async (i) => { await ip(['-n', sw.name, 'link', 'set', member(i).port, 'up']) },
      separate: async (i, j) => { await route('add', i, j) },
      join: async (i, j) => { await route('del', i, j) },
      dispose: async () => { for (const ns of made.reverse()) await ns.dispose() }
    }
  } catch (e) {
    for (const ns of made.reverse()) await ns.dispose().catch(() => {})
    throw e
  }
}
