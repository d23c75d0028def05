import { expect } from 'chai'
import { z } from 'zod'
import { normalizeKeys } from '../../src/api/contract/normalize-keys.js'
import { createApp } from '../../src/api/server/app.js'
import { ErrorCode, type RbtError } from '../../src/util/errors.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'
import { unusedConsensus } from './stub-consensus.js'

describe('api: case-insensitive JSON keys', () => {
  const schema = z.object({ DID: z.string(), tokens: z.object({ rbt: z.number(), ft: z.array(z.object({ ftName: z.string() })).optional() }).optional() })

  it('renames keys to the declared spelling at every depth', () => {
    expect(normalizeKeys({ did: 'x', TOKENS: { RBT: 1, Ft: [{ FTNAME: 'a' }] } }, schema)).to.deep.equal({ DID: 'x', tokens: { rbt: 1, ft: [{ ftName: 'a' }] } })
  })

  it('prefers the exact spelling when both are present and keeps unknown keys', () => {
    expect(normalizeKeys({ did: 'lower', DID: 'exact', extra: 1 }, schema)).to.deep.equal({ DID: 'exact', extra: 1 })
  })

  it('leaves non-objects alone', () => {
    expect(normalizeKeys('s', schema)).to.equal('s')
    expect(normalizeKeys(null, schema)).to.equal(null)
  })
})

describe('api: JSON keys that name prototype members', () => {
  const schema = z.object({ DID: z.string(), inner: z.object({ n: z.number() }).optional() })
  const PEER = '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'
  const DID = 'bafybmi' + 'b'.repeat(52)
  const added: unknown[] = []
  const app = createApp({
    node: { status: () => ({}) as never, startCore: async () => '', requestShutdown: () => {}, peerId: () => PEER, ping: async () => ({ rttMs: 0, message: '' }), addPeer: async (did, peerId) => { added.push({ did, peerId }) } },
    bootstrap: { list: async () => [], add: async (p) => p, remove: async () => [], removeAll: async () => [] },
    ...unusedIdentity(),
    ...unusedConsensus(),
    ...unusedTokens()
  }, { version: 't' })
  const post = async (path: string, body: string): Promise<{ code: number, env: { status: boolean, message: string } }> => {
    const res = await app.request(path, { method: 'POST', body, headers: { 'content-type': 'application/json' } })
    return { code: res.status, env: await res.json() as { status: boolean, message: string } }
  }

  it('__proto__, constructor and prototype are refused at any depth (INVALID_INPUT), and nothing is polluted', () => {
    for (const body of ['{"__proto__": {"DID": "x"}}', '{"constructor": 1, "DID": "x"}', '{"DID": "x", "inner": {"prototype": {}}}', '[{"a": [{"Constructor": 1}]}]']) {
      let err: unknown
      try { normalizeKeys(JSON.parse(body), schema) } catch (e) { err = e }
      expect((err as RbtError).code, body).to.equal(ErrorCode.INVALID_INPUT)
    }
    expect(({} as Record<string, unknown>).DID).to.equal(undefined)
  })

  it('a key named like an inherited member (toString, valueOf, hasOwnProperty) is an ordinary unknown key', () => {
    expect(normalizeKeys({ DID: 'x', toString: { a: 1 }, valueOf: [1], inner: { hasOwnProperty: { b: 2 }, n: 3 } }, schema))
      .to.deep.equal({ DID: 'x', toString: { a: 1 }, valueOf: [1], inner: { hasOwnProperty: { b: 2 }, n: 3 } })
  })

  it('over HTTP: 400 for the refused keys, the request still works around the others, never a 500', async () => {
    for (const key of ['__proto__', 'constructor', 'prototype', 'CONSTRUCTOR']) {
      const r = await post('/svc/v1/node/add_peers', `{"${key}": {"DID": "${DID}"}, "DID": "${DID}", "PeerID": "${PEER}"}`)
      expect(r.code, key).to.equal(400)
      expect(r.env).to.deep.include({ status: false, message: `Invalid input: the key "${key}" is not allowed` })
    }
    for (const key of ['toString', 'valueOf', 'hasOwnProperty', '__defineGetter__']) {
      const r = await post('/svc/v1/node/add_peers', `{"${key}": {"x": 1}, "DID": "${DID}", "PeerID": "${PEER}"}`)
      expect(r.code, key).to.equal(200)
    }
    expect(added).to.have.length(4)
    const q = await app.request('/svc/v1/signature/verify?constructor=1&signer_did=x')
    expect(q.status).to.equal(400)
    // deeply nested input is walked without recursion
    const deep = '['.repeat(100_000) + ']'.repeat(100_000)
    expect((await post('/svc/v1/node/add_peers', deep)).code).to.be.lessThan(500)
    expect(({} as Record<string, unknown>).DID).to.equal(undefined)
  })
})
