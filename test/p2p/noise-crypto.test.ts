import '../../src/util/polyfill.js'
import { expect } from 'chai'
import { randomBytes, randomInt } from 'node:crypto'
import { noise } from '@chainsafe/libp2p-noise'
import { nodeCrypto } from '@chainsafe/libp2p-noise/crypto'
import { yamux } from '@chainsafe/libp2p-yamux'
import type { Libp2p } from '@libp2p/interface'
import { ping, type Ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import { createLibp2p } from 'libp2p'
import { Uint8ArrayList } from 'uint8arraylist'
import { LARGE_BYTES, LARGE_TRIALS, fasterAead, nativeNoiseAead, noiseCrypto } from '../../src/p2p/noise-crypto.js'
import { pnetProtector } from '../../src/p2p/pnet-protector.js'
import { echoHandler, echoRoundTrip } from './byte-streams.js'
import { testSwarmKey } from './helpers.js'
import { withEnv } from '../helpers/env.js'

const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s.replace(/\s+/g, ''), 'hex'))
const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.compare(a, b) === 0
const ECHO = '/rbt-test/noise-echo/1.0.0'

/** `data` as a list cut at random places (a message that arrived over several reads). */
function scattered (data: Uint8Array): Uint8ArrayList {
  const list = new Uint8ArrayList()
  let at = 0
  while (at < data.byteLength) {
    const end = Math.min(data.byteLength, at + 1 + randomInt(Math.max(1, data.byteLength >> 2) + 1))
    list.append(data.slice(at, end))
    at = end
  }
  return list
}

describe('p2p/noise-crypto: Noise\'s ChaCha20-Poly1305 on libsodium, OpenSSL beside it', function () {
  const aead = nativeNoiseAead()
  before(function () {
    // the add-on ships binaries for the usual platforms; where it has none the library's default runs alone
    if (aead === null) this.skip()
  })

  it('RFC 8439 §2.8.2: the sunscreen message seals to the published ciphertext and tag, and opens', () => {
    const key = Uint8Array.from({ length: 32 }, (_, i) => 0x80 + i)
    const nonce = hex('07000000 4041424344454647')
    const ad = hex('50515253 c0c1c2c3c4c5c6c7')
    const plain = Buffer.from('Ladies and Gentlemen of the class of \'99: If I could offer you only one tip for the future, sunscreen would be it.')
    const sealed = hex(`d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb69da92728b
      1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116
      1ae10b594f09e26a7e902ecbd0600691`)
    expect(same(aead!.chaCha20Poly1305Encrypt(plain, nonce, ad, key).subarray(), sealed)).to.equal(true)
    expect(same(aead!.chaCha20Poly1305Decrypt(sealed, nonce, ad, key).subarray(), plain)).to.equal(true)
  })

  it('random messages (0 B to 70 KB, whole or in pieces): the same bytes as node:crypto, and each opens the other\'s', () => {
    for (let round = 0; round < 150; round++) {
      const key = randomBytes(32)
      const nonce = randomBytes(12)
      const ad = randomBytes(randomInt(3) === 0 ? 0 : randomInt(64))
      const len = round < 10 ? round : randomInt(round % 3 === 0 ? 70_000 : 2_000)
      const msg = randomBytes(len)
      const theirs = nodeCrypto.chaCha20Poly1305Encrypt(msg, nonce, ad, key).subarray()
      const ours = aead!.chaCha20Poly1305Encrypt(msg, nonce, ad, key).subarray()
      expect(same(ours, theirs), `length ${len}`).to.equal(true)
      expect(same(aead!.chaCha20Poly1305Encrypt(scattered(msg), nonce, ad, key).subarray(), theirs)).to.equal(true)
      expect(same(aead!.chaCha20Poly1305Decrypt(theirs, nonce, ad, key).subarray(), msg)).to.equal(true)
      expect(same(aead!.chaCha20Poly1305Decrypt(scattered(theirs), nonce, ad, key).subarray(), msg)).to.equal(true)
      expect(same(nodeCrypto.chaCha20Poly1305Decrypt(ours, nonce, ad, key).subarray(), msg)).to.equal(true)
    }
  })

  it('opens in place into the caller\'s buffer when asked, and leaves the ciphertext alone otherwise', () => {
    const key = randomBytes(32)
    const nonce = randomBytes(12)
    const msg = randomBytes(65_519)
    const sealed = Uint8Array.from(aead!.chaCha20Poly1305Encrypt(msg, nonce, new Uint8Array(0), key).subarray())
    const copy = sealed.slice()
    const out = aead!.chaCha20Poly1305Decrypt(sealed, nonce, new Uint8Array(0), key).subarray()
    expect(same(out, msg)).to.equal(true)
    expect(same(sealed, copy), 'no dst: the ciphertext is not overwritten').to.equal(true)
    const dst = sealed.subarray(0, msg.byteLength)
    const inPlace = aead!.chaCha20Poly1305Decrypt(sealed, nonce, new Uint8Array(0), key, dst)
    expect(inPlace).to.equal(dst)
    expect(same(dst, msg)).to.equal(true)
    // a dst over the same memory but shifted cannot take it in place: a fresh buffer instead
    const again = copy.slice()
    const shifted = again.subarray(1, 1 + msg.byteLength)
    const got = aead!.chaCha20Poly1305Decrypt(again, nonce, new Uint8Array(0), key, shifted).subarray()
    expect(same(got, msg)).to.equal(true)
  })

  it('a changed byte, tag or key is refused (no plaintext comes back)', () => {
    const key = randomBytes(32)
    const nonce = randomBytes(12)
    const sealed = Uint8Array.from(aead!.chaCha20Poly1305Encrypt(randomBytes(3000), nonce, new Uint8Array(0), key).subarray())
    for (const at of [0, 1500, sealed.byteLength - 1]) {
      const bad = sealed.slice()
      bad[at] ^= 1
      expect(() => aead!.chaCha20Poly1305Decrypt(bad, nonce, new Uint8Array(0), key)).to.throw(/ChaCha20-Poly1305/)
      expect(() => aead!.chaCha20Poly1305Decrypt(scattered(bad), nonce, new Uint8Array(0), key)).to.throw(/ChaCha20-Poly1305/)
    }
    expect(() => aead!.chaCha20Poly1305Decrypt(sealed, nonce, new Uint8Array(0), randomBytes(32))).to.throw(/ChaCha20-Poly1305/)
    expect(() => aead!.chaCha20Poly1305Decrypt(new Uint8Array(15), nonce, new Uint8Array(0), key)).to.throw(/shorter than its tag/)
  })

  it('the default is libsodium, and RBTNODE_NOISE_CIPHER=node keeps the library\'s own', async () => {
    expect(noiseCrypto().aead).to.equal('native')
    await withEnv({ RBTNODE_NOISE_CIPHER: 'node' }, () => {
      expect(noiseCrypto().aead).to.equal('node')
      expect(noiseCrypto('native').aead).to.equal('native')
    })
    await withEnv({ RBTNODE_NOISE_CIPHER: 'native' }, () => {
      expect(noiseCrypto().aead).to.equal('native')
    })
  })

  it('large messages on whichever of the two measured faster: each tried in turn, one kept, the same bytes as node:crypto throughout, a changed byte refused', () => {
    const calls = { native: 0, node: 0 }
    const counted = (name: 'native' | 'node', c: typeof nodeCrypto): typeof nodeCrypto => ({
      ...c,
      chaCha20Poly1305Encrypt: (...a: Parameters<typeof c.chaCha20Poly1305Encrypt>) => { calls[name]++; return c.chaCha20Poly1305Encrypt(...a) },
      chaCha20Poly1305Decrypt: (...a: Parameters<typeof c.chaCha20Poly1305Decrypt>) => { calls[name]++; return c.chaCha20Poly1305Decrypt(...a) }
    })
    const both = fasterAead(counted('native', { ...nodeCrypto, ...aead! }), counted('node', nodeCrypto))
    const key = randomBytes(32)
    const nonce = randomBytes(12)
    const ad = randomBytes(9)
    // small messages: libsodium alone, never measured
    for (let i = 0; i < 50; i++) {
      const msg = randomBytes(randomInt(LARGE_BYTES))
      const theirs = nodeCrypto.chaCha20Poly1305Encrypt(msg, nonce, ad, key).subarray()
      expect(same(both.chaCha20Poly1305Encrypt(msg, nonce, ad, key).subarray(), theirs)).to.equal(true)
      expect(same(both.chaCha20Poly1305Decrypt(theirs, nonce, ad, key).subarray(), msg)).to.equal(true)
    }
    expect(calls).to.deep.equal({ native: 100, node: 0 })
    expect(both.large).to.deep.equal({})
    // large ones: half each while measured, then one kept for sealing and one for opening
    for (let i = 0; i < 3 * LARGE_TRIALS; i++) {
      const msg = randomBytes(LARGE_BYTES + randomInt(60_000))
      const theirs = nodeCrypto.chaCha20Poly1305Encrypt(msg, nonce, ad, key).subarray()
      expect(same(both.chaCha20Poly1305Encrypt(i % 2 === 0 ? msg : scattered(msg), nonce, ad, key).subarray(), theirs), `message ${i}`).to.equal(true)
      expect(same(both.chaCha20Poly1305Decrypt(i % 2 === 0 ? theirs : scattered(theirs), nonce, ad, key).subarray(), msg), `message ${i}`).to.equal(true)
      const bad = theirs.slice()
      bad[randomInt(bad.byteLength)] ^= 1
      expect(() => both.chaCha20Poly1305Decrypt(bad, nonce, ad, key)).to.throw()
      if (i === 2 * LARGE_TRIALS - 1) expect(calls.node, 'each tried in turn').to.be.at.least(2 * LARGE_TRIALS)
    }
    expect(both.large.seal).to.be.oneOf(['native', 'node'])
    expect(both.large.open).to.be.oneOf(['native', 'node'])
  })

  it('libp2p nodes over TCP, pnet, Noise and Yamux: one on libsodium talks to one on node:crypto, and one on both (the default) to either', async () => {
    const make = async (cipher: 'native' | 'node' | 'auto'): Promise<Libp2p<{ ping: Ping }>> => {
      const node = await createLibp2p({
        addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
        transports: [tcp()],
        connectionEncrypters: [noise({ crypto: noiseCrypto(cipher) })],
        streamMuxers: [yamux()],
        connectionProtector: pnetProtector({ swarmKey: testSwarmKey }),
        services: { ping: ping() }
      })
      await node.handle(ECHO, echoHandler)
      return node
    }
    const nat = await make('native')
    const js = await make('node')
    const auto = await make('auto')
    try {
      for (const [from, to] of [[js, nat], [nat, js], [auto, nat], [js, auto]]) {
        const stream = await from.dialProtocol(to.getMultiaddrs()[0], ECHO, { signal: AbortSignal.timeout(10_000) })
        const data = randomBytes(2 * 1024 * 1024 + 5)
        expect(same(await echoRoundTrip(stream, data, [65_536, 1, 300_000, 70_000]), data)).to.equal(true)
        expect(await from.services.ping.ping(to.peerId)).to.be.a('number')
      }
    } finally {
      await js.stop()
      await nat.stop()
      await auto.stop()
    }
  })
})
