import { expect } from 'chai'
import { mkdtempSync, rmSync, statSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request } from 'undici'
import { NodeProcess } from '../helpers/node-process.js'
import { runCli } from '../helpers/cli.js'
import { freePort } from '../helpers/ports.js'

/** docs/security.md: the guard as a real node serves it, and the opt-in token. */
describe('e2e: API guard and token', function () {
  this.timeout(60_000)

  it('refuses to start with the API on a non-loopback address without -apiAuth', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rbtnode-guard-'))
    try {
      const r = await runCli(['run', '-p', dir, '-port', String(await freePort()), '-swarmPort', String(await freePort()), '-host', '0.0.0.0', '-mdns=false'], { timeoutMs: 30_000 })
      expect(r.code).to.not.equal(0)
      expect(r.stderr).to.match(/\[ERROR\] .*-apiAuth/)
    } finally { rmSync(dir, { recursive: true, force: true }) }
  })

  it('with -apiAuth: a fresh token in api.cookie (0600) at each start; calls without it get 401, the CLI sends RBTNODE_API_TOKEN', async () => {
    const node = await new NodeProcess({ extraArgs: ['-apiAuth'] }).start()
    const cookie = join(node.dir, 'api.cookie')
    const token = readFileSync(cookie, 'utf8').trim()
    try {
      expect(token).to.match(/^[0-9a-f]{64}$/)
      expect(statSync(cookie).mode & 0o777).to.equal(0o600)
      const noToken = await request(`${node.url}/svc/v1/node/peer_id`)
      expect(noToken.statusCode).to.equal(401)
      const body = await noToken.body.json() as { status: boolean, message: string }
      expect(body.status).to.equal(false)
      const withToken = await request(`${node.url}/svc/v1/node/peer_id`, { headers: { authorization: `Bearer ${token}` } })
      expect(withToken.statusCode).to.equal(200)
      await withToken.body.dump()
      const cliOk = await runCli(['get-peer-id', ...node.cliArgs], { env: { RBTNODE_API_TOKEN: token } })
      expect(cliOk.code, cliOk.stderr).to.equal(0)
      expect(cliOk.stdout).to.match(/^12D3KooW/)
      const cliFlag = await runCli(['get-peer-id', ...node.cliArgs, '-apiToken', token])
      expect(cliFlag.code, cliFlag.stderr).to.equal(0)
      const cliNo = await runCli(['get-peer-id', ...node.cliArgs])
      expect(cliNo.code).to.equal(1)
      expect(cliNo.stderr).to.match(/token/)
      // a foreign Host is refused even with the token
      const rebound = await request(`${node.url}/svc/v1/node/peer_id`, { headers: { authorization: `Bearer ${token}`, host: 'attacker.example' } })
      expect(rebound.statusCode).to.equal(403)
      await rebound.body.dump()
      // a restart writes a new token; the old one stops working
      await node.stop()
      await node.start()
      const next = readFileSync(cookie, 'utf8').trim()
      expect(next).to.not.equal(token)
      const old = await request(`${node.url}/svc/v1/node/peer_id`, { headers: { authorization: `Bearer ${token}` } })
      expect(old.statusCode).to.equal(401)
      await old.body.dump()
    } finally {
      await node.dispose()
    }
  })
})
