import { expect } from 'chai'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { defaultSwarmKeyPath, formatSwarmKey, loadSwarmKey, parseSwarmKey } from '../../src/p2p/swarm-key.js'

const MAIN_HEX = '278b9a199c43fa84178920bd9f5cbcd69e933ddf02a8f69e47a3ea5a1705512f'
const TEST_HEX = '47eb74a7ff56b83da94277b15e82e5ea6d13fd6d824581e4dec4a310e2b4adb8'

function expectConfigError (fn: () => unknown, fragment: string): void {
  try {
    fn()
  } catch (e) {
    expect(e).to.be.instanceOf(RbtError)
    expect((e as RbtError).code).to.equal(ErrorCode.CONFIG)
    expect((e as RbtError).message).to.contain(fragment)
    return
  }
  expect.fail('expected a CONFIG error')
}

describe('p2p/swarm-key', () => {
  let dir: string
  before(() => { dir = mkdtempSync(join(tmpdir(), 'rbt-swarm-')) })
  after(() => { rmSync(dir, { recursive: true, force: true }) })

  it('ships the main-net key without a trailing newline (95 bytes)', async () => {
    const path = defaultSwarmKeyPath(false)
    expect(existsSync(path)).to.equal(true)
    expect(readFileSync(path).length).to.equal(95)
    const k = await loadSwarmKey(path)
    expect(k.hex).to.equal(MAIN_HEX)
    expect(k.key.length).to.equal(32)
  })

  it('ships the test-net key with a trailing newline (96 bytes)', async () => {
    const path = defaultSwarmKeyPath(true)
    expect(readFileSync(path).length).to.equal(96)
    expect((await loadSwarmKey(path)).hex).to.equal(TEST_HEX)
  })

  it('accepts CRLF, surrounding blank space, upper-case hex and a byte-order mark', () => {
    expect(parseSwarmKey(`/key/swarm/psk/1.0.0/\r\n/base16/\r\n${TEST_HEX}\r\n`).hex).to.equal(TEST_HEX)
    expect(parseSwarmKey(`\n  /key/swarm/psk/1.0.0/  \n/base16/\n${TEST_HEX}  \n\n`).hex).to.equal(TEST_HEX)
    expect(parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${TEST_HEX.toUpperCase()}`).hex).to.equal(TEST_HEX)
    expect(parseSwarmKey(`\uFEFF/key/swarm/psk/1.0.0/\n/base16/\n${TEST_HEX}`).hex).to.equal(TEST_HEX)
  })

  it('produces the canonical file bytes that @libp2p/pnet expects, and round-trips', () => {
    const k = parseSwarmKey(`/key/swarm/psk/1.0.0/\r\n/base16/\r\n${MAIN_HEX}`)
    expect(new TextDecoder().decode(k.psk)).to.equal(`/key/swarm/psk/1.0.0/\n/base16/\n${MAIN_HEX}\n`)
    expect(parseSwarmKey(formatSwarmKey(k)).hex).to.equal(MAIN_HEX)
  })

  it('rejects malformed files with CONFIG errors that say what is wrong', () => {
    expectConfigError(() => parseSwarmKey(''), 'empty')
    expectConfigError(() => parseSwarmKey(' \n\n'), 'empty')
    expectConfigError(() => parseSwarmKey(`/key/swarm/psk/2.0.0/\n/base16/\n${TEST_HEX}`), 'first line')
    expectConfigError(() => parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base58/\n${TEST_HEX}`), 'second line')
    expectConfigError(() => parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base64/\n${TEST_HEX}`), '32 bytes')
    expectConfigError(() => parseSwarmKey('/key/swarm/psk/1.0.0/\n/base64/\nnot*base64'), 'base64')
    expectConfigError(() => parseSwarmKey(new Uint8Array([...Buffer.from('/key/swarm/psk/1.0.0/\n/bin/\n'), 1, 2, 3])), 'needs 32 bytes')
    expectConfigError(() => parseSwarmKey('/key/swarm/psk/1.0.0/\n/base16/\n'), 'missing')
    expectConfigError(() => parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${TEST_HEX.slice(2)}`), '64 hex')
    expectConfigError(() => parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${TEST_HEX}00`), '64 hex')
    expectConfigError(() => parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${TEST_HEX.slice(1)}z`), 'non-hex')
    expectConfigError(() => parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base16/\n${TEST_HEX}\nextra`), 'after the key')
    expectConfigError(() => parseSwarmKey(new Uint8Array([0xff, 0xfe, 0x00])), 'UTF-8')
  })

  it('reads the /base64/ and /bin/ encodings go-libp2p (and so Kubo) reads, to the same key', () => {
    const key = Buffer.from(TEST_HEX, 'hex')
    expect(parseSwarmKey(`/key/swarm/psk/1.0.0/\n/base64/\n${key.toString('base64')}\n`).hex).to.equal(TEST_HEX)
    const bin = new Uint8Array([...Buffer.from('/key/swarm/psk/1.0.0/\r\n/bin/\n'), ...key])
    expect(parseSwarmKey(bin).hex).to.equal(TEST_HEX)
    // the raw bytes may contain newlines and bytes that are not UTF-8: they are the key as they are
    const odd = Buffer.from(Array.from({ length: 32 }, (_, i) => i % 2 === 0 ? 0x0a : 0xff))
    expect(parseSwarmKey(new Uint8Array([...Buffer.from('/key/swarm/psk/1.0.0/\n/bin/\n'), ...odd])).key).to.deep.equal(Uint8Array.from(odd))
  })

  it('names the file in errors', async () => {
    const bad = join(dir, 'bad.key')
    writeFileSync(bad, 'hello')
    try {
      await loadSwarmKey(bad)
      expect.fail('should throw')
    } catch (e) {
      expect((e as RbtError).code).to.equal(ErrorCode.CONFIG)
      expect((e as RbtError).message).to.contain(bad)
    }
    try {
      await loadSwarmKey(join(dir, 'missing.key'))
      expect.fail('should throw')
    } catch (e) {
      expect((e as RbtError).code).to.equal(ErrorCode.CONFIG)
      expect((e as RbtError).message).to.contain('missing.key')
    }
  })

  it('reads files written with CRLF and without a final newline', async () => {
    const crlf = join(dir, 'crlf.key')
    writeFileSync(crlf, `/key/swarm/psk/1.0.0/\r\n/base16/\r\n${MAIN_HEX}`)
    expect((await loadSwarmKey(crlf)).hex).to.equal(MAIN_HEX)
  })
})
