import { expect } from 'chai'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ScCallbackEvent } from '../../../../src/api/contract/sc-results.js'
import { CallbackAddressPolicy, type ResolvedAddress } from '../../../../src/node/smart-contracts/callback-address.js'
import { CallbackDispatcher, MAX_URLS_PER_CONTRACT } from '../../../../src/node/smart-contracts/callbacks.js'
import { httpStatusOf } from '../../../../src/api/server/errors.js'
import { ErrorCode, RbtError } from '../../../../src/util/errors.js'
import { silentLogger } from '../../../../src/util/logger.js'
import { waitFor } from '../../../helpers/wait.js'

const SC = 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG'
const IFACES = [
  { address: '127.0.0.1', family: 'IPv4', cidr: '127.0.0.1/8' },
  { address: '192.168.7.20', family: 'IPv4', cidr: '192.168.7.20/24' },
  { address: 'fd12::20', family: 'IPv6', cidr: 'fd12::20/64' }
]
const API = 20000
const LEGACY = 1898

const event = (n: number): ScCallbackEvent => ({
  event: 'smart_contract_state', smart_contract_hash: SC, smartContractToken: SC, type: 'execute', blockId: `${n}-h${n}`, blockNumber: n,
  transactionId: `tx${n}`, initiator: 'bafybmi', data: '', state: String(n), stateHash: 'h', output: '', port: API
})

async function refusal (p: Promise<unknown>): Promise<RbtError> {
  try { await p } catch (e) {
    expect(e).to.be.instanceOf(RbtError)
    return e as RbtError
  }
  return expect.fail('should be refused')
}

describe('smart-contract callbacks: where they may go', () => {
  const names: Record<string, string[]> = {
    'example.org': ['93.184.216.34'],
    localhost: ['127.0.0.1', '::1'],
    'metadata.attacker.test': ['169.254.169.254'],
    'mixed.attacker.test': ['93.184.216.34', 'fe80::1'],
    'lan.app': ['192.168.7.31'],
    'me.attacker.test': ['192.168.7.20']
  }
  const lookup = async (host: string): Promise<ResolvedAddress[]> => {
    const a = names[host]
    if (a === undefined) throw new Error('ENOTFOUND')
    return a.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  }
  const policy = new CallbackAddressPolicy({ ownPorts: () => [API, LEGACY], lookup, interfaces: () => IFACES })
  const check = async (url: string): Promise<void> => { await policy.check(new URL(url)) }

  it('refuses link-local, metadata, multicast, unspecified and broadcast addresses, in every spelling', async () => {
    for (const url of [
      'http://169.254.169.254/latest/meta-data/', 'http://[fe80::1]/', 'http://[FE80::abcd]/', 'http://[::ffff:169.254.169.254]/',
      'http://[::ffff:a9fe:a9fe]/', 'http://[64:ff9b::169.254.169.254]/', 'http://[::169.254.169.254]/', 'http://0xA9FEA9FE/', 'http://2852039166/',
      'http://[fd00:ec2::254]/', 'http://100.100.100.200/', 'http://0.0.0.0:8080/', 'http://0/', 'http://[::]/', 'http://224.0.0.251/',
      'http://[ff02::1]/', 'http://255.255.255.255/', 'http://192.168.7.255/', 'http://metadata.attacker.test/', 'http://mixed.attacker.test/'
    ]) {
      const e = await refusal(check(url))
      expect(httpStatusOf(e.code), url).to.equal(400)
      expect(e.message, url).to.match(/link-local|metadata|multicast|unspecified|broadcast|reserved/)
    }
  })

  it('refuses this node\'s own API and release-2.6 ports on every local address, by address or by name', async () => {
    for (const url of [
      `http://127.0.0.1:${API}/svc/v1/node/shutdown`, `http://127.9.9.9:${API}/`, `http://[::1]:${LEGACY}/verifyPoW`, `http://localhost:${API}/`,
      `http://[::ffff:127.0.0.1]:${API}/`, `http://192.168.7.20:${API}/`, `http://me.attacker.test:${LEGACY}/`, `http://[fd12::20]:${API}/`
    ]) {
      expect((await refusal(check(url))).message, url).to.match(/this node's own API/)
    }
    // a zone index on a link-local address changes nothing
    expect(() => { policy.checkAddress('x', 'fe80::1%eth0', 80) }).to.throw(RbtError, /link-local/)
    // port 80 when the API itself listens there
    const on80 = new CallbackAddressPolicy({ ownPorts: () => [80], lookup, interfaces: () => IFACES })
    expect((await refusal(on80.check(new URL('http://127.0.0.1/cb')))).message).to.match(/own API/)
  })

  it('allows the operator\'s own apps on loopback and the LAN, and public hosts', async () => {
    for (const url of [
      'http://127.0.0.1:9999/cb', `http://localhost:${API + 1}/cb`, 'http://192.168.7.31:8080/', 'http://lan.app:3000/hook',
      'http://10.1.2.3/', 'https://example.org/cb', 'http://[fd12::31]:8080/', `http://93.184.216.34:${API}/`
    ]) await check(url)
    expect((await refusal(check('http://nowhere.test/'))).message).to.match(/does not resolve/)
  })

  it('a callback_hosts allowlist narrows it further; the address rules still apply to what it names', async () => {
    const narrow = new CallbackAddressPolicy({ ownPorts: () => [API], lookup, interfaces: () => IFACES, allowHosts: ['LAN.app', 'metadata.attacker.test', '[::1]'] })
    await narrow.check(new URL('http://lan.app:3000/'))
    await narrow.check(new URL('http://[::1]:3000/'))
    expect((await refusal(narrow.check(new URL('http://example.org/')))).message).to.match(/callback_hosts/)
    expect((await refusal(narrow.check(new URL('http://192.168.7.31/')))).message).to.match(/callback_hosts/)
    expect((await refusal(narrow.check(new URL('http://metadata.attacker.test/')))).message).to.match(/link-local/)
  })
})

describe('smart-contract callbacks: registration and delivery', function () {
  this.timeout(20_000)
  const servers: Server[] = []
  afterEach(async () => {
    await Promise.all(servers.splice(0).map(async (s) => { s.closeAllConnections(); await new Promise((resolve) => s.close(resolve)) }))
  })
  const serve = async (fn: (req: IncomingMessage, res: ServerResponse) => void): Promise<number> => {
    const s = createServer(fn)
    servers.push(s)
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
    return (s.address() as AddressInfo).port
  }
  /** a receiver recording the events it gets */
  const receiver = async (status = 200): Promise<{ port: number, got: Array<{ host?: string, e: ScCallbackEvent }> }> => {
    const got: Array<{ host?: string, e: ScCallbackEvent }> = []
    const port = await serve((req, res) => {
      let body = ''
      req.on('data', (c) => { body += String(c) })
      req.on('end', () => { got.push({ host: req.headers.host, e: JSON.parse(body) as ScCallbackEvent }); res.statusCode = status; res.end() })
    })
    return { port, got }
  }
  const dispatcher = (o: Partial<ConstructorParameters<typeof CallbackDispatcher>[0]> = {}): { d: CallbackDispatcher, store: Map<string, string[]> } => {
    const store = new Map<string, string[]>()
    const d = new CallbackDispatcher({
      store: { get: async (id) => store.get(id), put: async (id, urls) => { store.set(id, [...urls]) } },
      log: silentLogger,
      attempts: 3,
      backoffMs: 20,
      timeoutMs: 2000,
      interfaces: () => IFACES,
      ...o
    })
    return { d, store }
  }

  it('at most five URLs per contract (409 beyond); the same URL twice is one', async () => {
    const { d } = dispatcher()
    for (let i = 0; i < MAX_URLS_PER_CONTRACT; i++) await d.register(SC, `http://127.0.0.1:${9000 + i}/cb`)
    expect(await d.register(SC, 'http://127.0.0.1:9000/cb')).to.have.length(MAX_URLS_PER_CONTRACT)
    const e = await refusal(d.register(SC, 'http://127.0.0.1:9100/cb'))
    expect([e.code, httpStatusOf(e.code)]).to.deep.equal([ErrorCode.CONFLICT, 409])
    // concurrent registrations do not get past the cap either
    const other = 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdH'
    const results = await Promise.allSettled(Array.from({ length: 12 }, async (_, i) => await d.register(other, `http://127.0.0.1:${9200 + i}/cb`)))
    expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(MAX_URLS_PER_CONTRACT)
  })

  it('a callback to the node\'s own shutdown route is refused at registration, and one already stored is never delivered', async () => {
    let shutdowns = 0
    const api = await serve((req, res) => { if (req.url === '/svc/v1/node/shutdown') shutdowns++; res.end('{"status":true}') })
    const { d, store } = dispatcher({ ownPorts: () => [api] })
    const e = await refusal(d.register(SC, `http://127.0.0.1:${api}/svc/v1/node/shutdown`))
    expect(httpStatusOf(e.code)).to.equal(400)
    expect(e.message).to.match(/own API/)
    // stored before this rule existed, next to a legitimate receiver
    const r = await receiver()
    store.set(SC, [`http://127.0.0.1:${api}/svc/v1/node/shutdown`, `http://[::ffff:127.0.0.1]:${api}/svc/v1/node/shutdown`, `http://127.0.0.1:${r.port}/cb`])
    d.notify(event(1))
    await d.drain(5000)
    expect(r.got).to.have.length(1)
    expect(shutdowns).to.equal(0)
  })

  it('checks again at delivery and connects to the checked address: a name rebound to a metadata address is not reached', async () => {
    const r = await receiver()
    let answer = '127.0.0.1'
    let lookups = 0
    const { d } = dispatcher({ lookup: async () => { lookups++; return [{ address: answer, family: 4 }] } })
    await d.register(SC, `http://hooks.rebind.test:${r.port}/cb`)
    d.notify(event(1))
    await waitFor(() => r.got.length === 1, { what: 'the first event' })
    // the name is not in any real resolver: the request went to the address the check returned
    expect(r.got[0].host).to.equal(`hooks.rebind.test:${r.port}`)
    expect(r.got[0].e.blockId).to.equal('1-h1')
    answer = '169.254.169.254'
    const before = lookups
    d.notify(event(2))
    await d.drain(5000)
    expect(lookups).to.be.greaterThan(before)
    expect(r.got).to.have.length(1)
  })

  it('does not follow redirects: a 3xx is a failed attempt', async () => {
    const target = await receiver()
    let redirects = 0
    const port = await serve((_req, res) => { redirects++; res.writeHead(307, { location: `http://127.0.0.1:${target.port}/cb` }); res.end() })
    const { d } = dispatcher()
    await d.register(SC, `http://127.0.0.1:${port}/cb`)
    d.notify(event(1))
    await d.drain(5000)
    expect(redirects).to.equal(3)
    expect(target.got).to.have.length(0)
  })

  it('never reads a response body: an endless answer does not hold delivery or memory', async () => {
    let closed = false
    let written = 0
    const port = await serve((req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'application/octet-stream' })
      const chunk = Buffer.alloc(64 * 1024, 1)
      const pump = (): void => { while (!res.destroyed && res.write(chunk)) written += chunk.length; if (!res.destroyed) res.once('drain', pump) }
      res.on('close', () => { closed = true })
      pump()
    })
    const { d } = dispatcher()
    await d.register(SC, `http://127.0.0.1:${port}/cb`)
    d.notify(event(1))
    await d.drain(5000)
    await waitFor(() => closed, { what: 'the connection to be closed' })
    expect(written).to.be.below(16 * 1024 * 1024)
  })

  it('keeps a bounded queue per URL: the oldest waiting events are dropped', async () => {
    const got: string[] = []
    let release!: () => void
    const held = new Promise<void>((resolve) => { release = resolve })
    const port = await serve((req, res) => {
      let body = ''
      req.on('data', (c) => { body += String(c) })
      req.on('end', () => {
        got.push((JSON.parse(body) as ScCallbackEvent).blockId)
        if (got.length === 1) void held.then(() => res.end())
        else res.end()
      })
    })
    const { d } = dispatcher({ maxQueuedPerUrl: 3 })
    await d.register(SC, `http://127.0.0.1:${port}/cb`)
    d.notify(event(1))
    await waitFor(() => got.length === 1, { what: 'the first event' })
    for (let n = 2; n <= 10; n++) d.notify(event(n))
    await new Promise((resolve) => setTimeout(resolve, 100))
    release()
    await waitFor(() => got.length === 4, { what: 'the queued events' })
    await d.drain(2000)
    expect(got).to.deep.equal(['1-h1', '8-h8', '9-h9', '10-h10'])
  })
})
