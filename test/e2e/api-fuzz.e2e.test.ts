import { expect } from 'chai'
import { request } from 'undici'
import { paths } from '../../src/api/contract/paths.js'
import { legacy26Routes } from '../../src/api/contract/legacy26.js'
import { NodeProcess } from '../helpers/node-process.js'
import { freePort } from '../helpers/ports.js'

/**
 * A bounded fuzz of every operation of the contract (and of the 2.6 port) against a real node:
 * malformed and hostile bodies, wrong types, sizes, traversal in ids and queries, wrong content
 * types. Every answer must be an envelope with a 4xx or a 2xx: never a 5xx, never a dropped
 * connection, and the node must still be up at the end.
 */
// stopping the node is what these do, whatever the body
const NEVER = new Set(['nodeShutdown', 'legacyShutdown'])
const TRAVERSAL = ['..%2F..%2Fetc%2Fpasswd', '%2E%2E', '%00', 'x'.repeat(600), '%E2%80%AE', '<script>']
const QUERY_KEYS = ['did', 'DID', 'nft', 'txnID', 'quorumAddress', 'peerID', 'latest', 'start_date', 'start_epoch', 'token', 'tokenID', 'Role', 'comment', 'contract', 'port', 'path']
const BODIES: Array<[string, string, string]> = [
  ['not json', 'application/json', '{"did": '],
  ['an array', 'application/json', '[1,2,3]'],
  ['null', 'application/json', 'null'],
  ['a number', 'application/json', '12'],
  ['prototype keys', 'application/json', '{"__proto__": {"polluted": 1}, "constructor": {"prototype": {}}, "toString": "x"}'],
  ['wrong types', 'application/json', JSON.stringify({ did: 5, DID: [], password: {}, peers: 'x', rbt: 'abc', tokens: { rbt: -1, nft: 7 }, id: '../../etc/passwd', name: '../x', db_name: '/etc/passwd', private_key: '/etc/shadow', quorumList: [{}], count: 1e308, token_count: -5 })],
  ['huge strings', 'application/json', JSON.stringify({ did: 'a'.repeat(100_000), password: 'p'.repeat(100_000), memo: 'm'.repeat(100_000) })],
  ['deep nesting', 'application/json', '['.repeat(20_000) + ']'.repeat(20_000)],
  ['control characters', 'application/json', JSON.stringify({ did: 'bafy\n[INFO] forged', comment: '\u0000\u001b[31m' })],
  ['text/plain', 'text/plain', '{"did":"x"}'],
  ['a form', 'application/x-www-form-urlencoded', 'did=x&password=y'],
  ['broken multipart', 'multipart/form-data; boundary=zz', '--zz\r\nContent-Disposition: form-data; name="did"\r\n\r\n../../x\r\n--zz--'],
  ['oversized', 'application/json', JSON.stringify({ did: 'x'.repeat(2 * 1024 * 1024) })]
]

describe('e2e: bounded fuzz of every API operation (no 5xx)', function () {
  this.timeout(300_000)
  let node: NodeProcess
  let legacyPort = 0

  before(async () => {
    legacyPort = await freePort()
    node = await new NodeProcess({ extraArgs: ['-testNet', '-legacyPort', String(legacyPort)], env: { RBTNODE_LOG_LEVEL: 'ERROR' } }).start()
  })
  after(async () => { await node?.dispose() })

  const send = async (base: string, method: string, path: string, body?: [string, string, string]): Promise<{ status: number, text: string }> => {
    const res = await request(`${base}${path}`, {
      method: method as 'GET',
      headers: body !== undefined ? { 'content-type': body[1] } : {},
      body: body?.[2],
      headersTimeout: 60_000,
      bodyTimeout: 60_000
    })
    return { status: res.statusCode, text: await res.body.text() }
  }

  it('every route of /svc/v1 and /api answers malformed input with an envelope and a 4xx (or 2xx), never a 5xx', async () => {
    const bad: string[] = []
    let count = 0
    const check = (what: string, r: { status: number, text: string }): void => {
      count++
      let env: { status?: unknown } | undefined
      try { env = JSON.parse(r.text) } catch {}
      // the 2.6 envelope writes its status as "true"/"false"; a 2xx may be a document (OpenAPI, files)
      const envelope = typeof env?.status === 'boolean' || env?.status === 'true' || env?.status === 'false'
      if (r.status >= 500 || (r.status >= 300 && !envelope)) bad.push(`${what}: HTTP ${r.status} ${r.text.slice(0, 160)}`)
    }
    for (const [id, def] of Object.entries(paths)) {
      if (NEVER.has(id)) continue
      const withParams = (v: string): string => def.path.replace(/:[A-Za-z_]+/g, v)
      const targets = def.path.includes(':') ? TRAVERSAL.map(withParams) : [def.path]
      for (const path of targets) {
        if (def.method === 'GET' || def.method === 'DELETE') {
          for (const v of TRAVERSAL) check(`${id} ${def.method} ${path}?…=${v}`, await send(node.url, def.method, `${path}?${QUERY_KEYS.map((k) => `${k}=${v}`).join('&')}`))
          check(`${id} ${def.method} ${path}`, await send(node.url, def.method, path))
        } else {
          for (const b of BODIES) check(`${id} POST ${path} (${b[0]})`, await send(node.url, 'POST', path, b))
        }
      }
      // the other method on the same path
      check(`${id} wrong method`, await send(node.url, def.method === 'GET' ? 'POST' : 'GET', withParams('x')))
    }
    for (const def of Object.values(legacy26Routes)) {
      const base = `http://127.0.0.1:${legacyPort}`
      for (const b of BODIES) check(`2.6 ${def.path} (${b[0]})`, await send(base, 'POST', def.path, b))
      check(`2.6 ${def.path} GET`, await send(base, 'GET', def.path))
    }
    expect(bad, bad.join('\n')).to.deep.equal([])
    expect(count).to.be.greaterThan(500)
    // still serving
    expect((await node.client.call('nodeStatus')).result?.core_started).to.equal(true)
    expect(node.running).to.equal(true)
  })
})
