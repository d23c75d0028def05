/**
 * Blocks and /x/ streams against real Kubo daemons configured as the reference's, with Kubo's own
 * commands on the other side: `ipfs cat`/`get`/`pin add` of what rbtnode holds, rbtnode's fetch of
 * what Kubo added, and HTTP/1.1 over `/x/<peer>RubixCore/1.0` both ways (`p2p forward` into
 * rbtnode's handler, rbtnode's dialer into a `p2p listen` target). Skipped, saying why, without a
 * Kubo binary or network namespaces.
 */
import { expect } from 'chai'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { didFromPublicFiles } from '../../../src/wallet/did-string.js'
import { KuboDaemon, requireKubo } from '../../helpers/kubo.js'
import { KuboBlocksPeer, TEST_SWARM_KEY, bigBody, sha256 } from '../../helpers/kubo-blocks-peer.js'
import { createNetns, type Netns } from '../../helpers/netns.js'
import { freePort } from '../../helpers/ports.js'
import { NodeProcess } from '../../helpers/node-process.js'
import { ROOT, runCli } from '../../helpers/cli.js'

const execFileP = promisify(execFile)

/** Builds test/fixtures/go-http (Go's net/http server and client) into `dir`; undefined without Go. */
async function buildGoHttp (dir: string): Promise<string | undefined> {
  const out = join(dir, 'gohttp')
  try {
    await execFileP('go', ['build', '-o', out, '.'], { cwd: join(ROOT, 'test', 'fixtures', 'go-http'), timeout: 180_000, env: { ...process.env, GOFLAGS: '-mod=mod' } })
    return out
  } catch (e) {
    console.log(`      (Go's net/http peer not built: ${(e as Error).message.split('\n')[0]})`)
    return undefined
  }
}

/** `ipfs <args>` with its stdout as bytes (KuboDaemon.ipfs reads text). */
async function ipfsBytes (k: KuboDaemon, ns: Netns, args: string[], timeoutMs = 60_000): Promise<Buffer> {
  const argv = ns.execArgs('env', [`IPFS_PATH=${k.repo}`, 'LIBP2P_FORCE_PNET=1', k.bin, ...args])
  const { stdout } = await execFileP('ip', argv, { encoding: 'buffer', timeout: timeoutMs, maxBuffer: 512 * 1024 * 1024 })
  return stdout
}

describe('p2p/kubo: blocks and /x/ streams against Kubo', function () {
  this.timeout(240_000)
  let ns: Netns | undefined
  let kubo: KuboDaemon
  let peer: KuboBlocksPeer
  let work: string

  before(async function () {
    await requireKubo(this)
    ns = await createNetns('kubo-blocks')
    work = mkdtempSync(join(tmpdir(), 'rbt-kubo-blocks-'))
    kubo = await new KuboDaemon({ netns: ns, swarmKey: TEST_SWARM_KEY }).start()
    peer = await KuboBlocksPeer.start(ns)
    await peer.call('dial', { addr: kubo.multiaddr })
  })

  after(async () => {
    await peer?.stop().catch(() => {})
    await kubo?.stop().catch(() => {})
    await ns?.dispose()
    if (work !== undefined) rmSync(work, { recursive: true, force: true })
  })

  /** A file of `size` random bytes in the work dir. */
  function file (name: string, size: number): { path: string, bytes: Buffer } {
    const bytes = randomBytes(size)
    const path = join(work, name)
    writeFileSync(path, bytes)
    return { path, bytes }
  }

  describe('Kubo reads what rbtnode holds', () => {
    // 3 chunks and a bit: the root is an inner node, so every kind of node crosses
    const f = { path: '', bytes: Buffer.alloc(0), cid: '' }
    before(async () => {
      Object.assign(f, file('rbt-file.bin', 3 * 262_144 + 1234))
      f.cid = (await peer.call<{ cid: string }>('addFile', { path: f.path, layout: 'v0' })).cid
    })

    it('rbtnode gives a file the CID `ipfs add` gives it (CIDv0)', async () => {
      expect(f.cid).to.match(/^Qm/)
      expect((await kubo.ipfs(['add', '-Q', '--only-hash', f.path])).trim()).to.equal(f.cid)
    })

    it('ipfs cat of a file rbtnode holds is byte-equal', async () => {
      const out = await ipfsBytes(kubo, ns!, ['cat', f.cid])
      expect(sha256(out)).to.equal(sha256(f.bytes))
    })

    it('ipfs get of a file rbtnode holds is byte-equal', async () => {
      const dest = join(work, 'kubo-got.bin')
      await kubo.ipfs(['get', f.cid, '-o', dest], { timeoutMs: 60_000 })
      expect(sha256(readFileSync(dest))).to.equal(sha256(f.bytes))
    })

    it('ipfs pin add of a file rbtnode holds takes every block', async () => {
      // a file of its own: the blocks of the one above are in Kubo's store already
      const g = file('rbt-pin.bin', 2 * 262_144 + 7)
      const { cid } = await peer.call<{ cid: string }>('addFile', { path: g.path, layout: 'v0' })
      await kubo.ipfs(['pin', 'add', cid], { timeoutMs: 60_000 })
      expect(await kubo.ipfs(['pin', 'ls', '--type=recursive', cid])).to.include(cid)
      const out = await ipfsBytes(kubo, ns!, ['cat', '--offline', cid])
      expect(sha256(out)).to.equal(sha256(g.bytes))
    })

    it("ipfs get of a DID folder rbtnode holds, re-added with --cid-version 1 --hash sha3-256, gives the DID", async () => {
      // a DID's public files: one past a chunk, so the folder holds an inner node and raw leaves
      const files: Record<string, Uint8Array> = {
        'did.png': randomBytes(262_144 + 4321),
        'pubShare.png': randomBytes(40_000),
        'pubKey.pem': Buffer.from('-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n')
      }
      const did = didFromPublicFiles(files)
      const dir = join(work, 'did-src')
      mkdirSync(dir)
      for (const [n, b] of Object.entries(files)) writeFileSync(join(dir, n), b)
      const { cid } = await peer.call<{ cid: string }>('addFolder', { dir, layout: 'v1-sha3' })
      expect(cid).to.equal(did)
      const dest = join(work, 'did-got')
      await kubo.ipfs(['get', did, '-o', dest], { timeoutMs: 60_000 })
      expect(readdirSync(dest).sort()).to.deep.equal(Object.keys(files).sort())
      for (const [n, b] of Object.entries(files)) expect(sha256(readFileSync(join(dest, n))), n).to.equal(sha256(b))
      const readded = (await kubo.ipfs(['add', '-r', '-Q', '--cid-version', '1', '--hash', 'sha3-256', dest])).trim()
      expect(readded).to.equal(did)
    })
  })

  describe('rbtnode reads what Kubo added', () => {
    it('rbtnode fetches a file Kubo added (ipfs add, CIDv0), byte-equal', async () => {
      const f = file('kubo-file.bin', 5 * 262_144 + 99)
      const cid = (await kubo.ipfs(['add', '-Q', f.path])).trim()
      const dest = join(work, 'rbt-got.bin')
      await peer.call('get', { cid, path: dest })
      expect(sha256(readFileSync(dest))).to.equal(sha256(f.bytes))
    })

    it('rbtnode fetches a folder Kubo added with --cid-version 1 --hash sha3-256, byte-equal', async () => {
      const dir = join(work, 'kubo-dir')
      mkdirSync(dir)
      const files = { 'a.bin': randomBytes(300_000), 'b.txt': Buffer.from('a DID folder file\n'), 'c.bin': randomBytes(10) }
      for (const [n, b] of Object.entries(files)) writeFileSync(join(dir, n), b)
      const cid = (await kubo.ipfs(['add', '-r', '-Q', '--cid-version', '1', '--hash', 'sha3-256', dir])).trim()
      expect(cid).to.equal(didFromPublicFiles(files))
      const dest = join(work, 'rbt-got-dir')
      await peer.call('get', { cid, path: dest })
      for (const [n, b] of Object.entries(files)) expect(sha256(readFileSync(join(dest, n))), n).to.equal(sha256(b))
    })
  })

  describe('rbtnode run -kubo', () => {
    let node: NodeProcess | undefined
    after(async () => { await node?.dispose().catch(() => {}) })

    it("ipfs get of a node's DID (as a reference node fetches another's) writes its public folder, which re-adds to the DID", async () => {
      node = await new NodeProcess({ netns: ns!, extraArgs: ['-testNet', '-kubo', '-mdns=false'], startTimeoutMs: 60_000 }).start()
      const mnemonic = 'abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon art'
      const r = await runCli(['createdid', ...node.cliArgs, '-didType', '4', '-mnemonic', mnemonic, '-childPath', '1', '-privPWD', 'kubo-pw', '-quorumPWD', 'kubo-pw'], { netns: ns! })
      expect(r.code, r.stderr).to.equal(0)
      const did = r.stdout.trim()
      expect(did).to.match(/^bafybmi[a-z2-7]{52}$/)
      await kubo.ipfs(['swarm', 'connect', node.multiaddr])
      const dest = join(work, 'node-did')
      await kubo.ipfs(['get', did, '-o', dest], { timeoutMs: 60_000 })
      expect(readdirSync(dest).length).to.be.greaterThan(0)
      expect((await kubo.ipfs(['add', '-r', '-Q', '--cid-version', '1', '--hash', 'sha3-256', dest])).trim()).to.equal(did)
    })
  })

  describe('HTTP/1.1 over /x/<peer>RubixCore/1.0', () => {
    it("ipfs p2p forward reaches rbtnode's /x/ handler, with bodies over 64 KiB both ways", async () => {
      const port = await freePort()
      const proto = `/x/${peer.peerId}RubixCore/1.0`
      await kubo.ipfs(['p2p', 'forward', proto, `/ip4/127.0.0.1/tcp/${port}`, `/p2p/${peer.peerId}`])
      try {
        const ping = await peer.call<{ status: number, sha256: string }>('tcpRequest', { port, method: 'GET', path: '/api/ping' })
        expect(ping.status).to.equal(200)
        const echo = await peer.call<{ status: number, length: number, sha256: string }>('tcpRequest', { port, method: 'POST', path: '/echo', bodyLength: 300_000 })
        expect(echo).to.include({ status: 200, length: 300_000, sha256: sha256(bigBody(300_000)) })
        const big = await peer.call<{ status: number, length: number, sha256: string, headers: Record<string, string> }>('tcpRequest', { port, method: 'GET', path: '/big?n=200000' })
        expect(big).to.include({ status: 200, length: 200_000, sha256: sha256(bigBody(200_000)) })
        expect(big.headers['transfer-encoding']).to.equal('chunked')
      } finally {
        await kubo.ipfs(['p2p', 'close', '--all'])
      }
    })

    it('rbtnode reaches a p2p listen target, with bodies over 64 KiB both ways; a non-200 answer is a failure', async () => {
      const { port } = await peer.call<{ port: number }>('tcpServe')
      const proto = `/x/${kubo.peerId}RubixCore/1.0`
      await kubo.ipfs(['p2p', 'listen', proto, `/ip4/127.0.0.1/tcp/${port}`])
      try {
        const ping = await peer.call<{ status: number, text: string }>('xRequest', { peer: kubo.peerId, method: 'GET', path: '/api/ping' })
        expect(ping.status).to.equal(200)
        expect(JSON.parse(ping.text)).to.deep.equal({ status: true, message: 'Ping Received' })
        const echo = await peer.call<{ status: number, length: number, sha256: string }>('xRequest', { peer: kubo.peerId, method: 'POST', path: '/echo', bodyLength: 500_000 })
        expect(echo).to.include({ status: 200, length: 500_000, sha256: sha256(bigBody(500_000)) })
        const big = await peer.call<{ status: number, length: number, sha256: string }>('xRequest', { peer: kubo.peerId, method: 'GET', path: '/big?n=1000000' })
        expect(big).to.include({ status: 200, length: 1_000_000, sha256: sha256(bigBody(1_000_000)) })
        const refused = await peer.call<{ error?: string, status?: number }>('xRequest', { peer: kubo.peerId, method: 'GET', path: '/status?code=500' })
        expect(refused).to.include({ error: 'PROTOCOL', status: 500 })
      } finally {
        await kubo.ipfs(['p2p', 'close', '--all'])
      }
    })

    describe("with Go's net/http on Kubo's side, as a reference node has it", () => {
      let gohttp: string | undefined
      before(async function () {
        gohttp = await buildGoHttp(work)
        if (gohttp === undefined) this.skip()
      })

      it("a Go client through ipfs p2p forward reaches rbtnode's /x/ handler, with bodies over 64 KiB both ways", async () => {
        const port = await freePort()
        await kubo.ipfs(['p2p', 'forward', `/x/${peer.peerId}RubixCore/1.0`, `/ip4/127.0.0.1/tcp/${port}`, `/p2p/${peer.peerId}`])
        try {
          const call = async (path: string, post?: number): Promise<string> => (await ns!.run(gohttp!, ['call', `http://127.0.0.1:${port}${path}`, ...(post !== undefined ? [String(post)] : [])])).trim()
          expect(await call('/echo', 300_000)).to.equal(`200 300000 ${sha256(bigBody(300_000))}`)
          expect(await call('/big?n=200000')).to.equal(`200 200000 ${sha256(bigBody(200_000))}`)
          expect((await call('/api/ping')).split(' ')[0]).to.equal('200')
        } finally {
          await kubo.ipfs(['p2p', 'close', '--all'])
        }
      })

      it('rbtnode reaches a Go server behind p2p listen: chunked and Content-Length bodies over 64 KiB whole, a 500 a failure', async () => {
        const port = await freePort()
        const srv = ns!.spawn(gohttp!, ['serve', String(port)], { stdio: ['ignore', 'pipe', 'pipe'] })
        try {
          await new Promise<void>((resolve, reject) => {
            srv.stdout?.on('data', (d: Buffer) => { if (d.toString().includes('listening')) resolve() })
            srv.once('exit', (c) => { reject(new Error(`gohttp serve exited ${c}`)) })
          })
          await kubo.ipfs(['p2p', 'listen', `/x/${kubo.peerId}RubixCore/1.0`, `/ip4/127.0.0.1/tcp/${port}`])
          const ask = async (method: string, path: string, bodyLength?: number): Promise<{ status?: number, length?: number, sha256?: string, error?: string, headers?: Record<string, string> }> =>
            await peer.call('xRequest', { peer: kubo.peerId, method, path, ...(bodyLength !== undefined ? { bodyLength } : {}) })
          const big = await ask('GET', '/big?n=1000000')
          expect(big).to.include({ status: 200, length: 1_000_000, sha256: sha256(bigBody(1_000_000)) })
          expect(big.headers?.['transfer-encoding']).to.equal('chunked')
          expect(await ask('POST', '/echo', 700_000)).to.include({ status: 200, length: 700_000, sha256: sha256(bigBody(700_000)) })
          expect(await ask('GET', '/status?code=500')).to.include({ error: 'PROTOCOL', status: 500 })
        } finally {
          await kubo.ipfs(['p2p', 'close', '--all'])
          srv.kill('SIGKILL')
        }
      })
    })
  })
})
