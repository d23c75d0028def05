import { expect } from 'chai'
import { createLogger, formatJson, formatLine, parseLogFormat, RecentLog } from '../../../src/util/logger.js'
import { colourLevel, painterFor, plainPainter } from '../../../src/util/colour.js'

const AT = new Date('2024-05-01T12:00:00.000Z')
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/

describe('logger: json format', () => {
  it('formats one object per line with time, level, msg and component', () => {
    const line = formatJson({ time: AT.toISOString(), level: 'WARN', msg: 'peer gone', component: 'p2p.rpc' })
    expect(JSON.parse(line)).to.deep.equal({ time: '2024-05-01T12:00:00.000Z', level: 'WARN', msg: 'peer gone', component: 'p2p.rpc' })
    expect(JSON.parse(formatJson({ time: AT.toISOString(), level: 'INFO', msg: 'x' }))).to.not.have.property('component')
  })

  it('keeps control characters, DEL, C1 and line separators escaped, and the message intact once parsed', () => {
    const msg = 'a\nb\r\t\u001b[31mred\u007f\u009b\u2028\u2029"\\'
    const line = formatJson({ time: AT.toISOString(), level: 'ERROR', msg })
    // eslint-disable-next-line no-control-regex
    expect(line).to.not.match(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/)
    expect(JSON.parse(line).msg).to.equal(msg)
  })

  it('a json logger writes parseable lines; child names become the component, not a message prefix', () => {
    const lines: string[] = []
    const log = createLogger({ level: 'DEBUG', format: 'json', write: (l) => { lines.push(l) } })
    log.info('ready')
    log.child('consensus').child('sender').error('tx failed\nforged [INFO] line')
    expect(lines).to.have.length(2)
    const [a, b] = lines.map((l) => JSON.parse(l) as Record<string, string>)
    expect(a).to.include({ level: 'INFO', msg: 'ready' })
    expect(a).to.not.have.property('component')
    expect(b).to.include({ level: 'ERROR', component: 'consensus.sender', msg: 'tx failed\nforged [INFO] line' })
    expect(Date.parse(b.time)).to.be.a('number').and.not.NaN
  })

  it('the text format stays the default, byte for byte', () => {
    const lines: string[] = []
    createLogger({ write: (l) => { lines.push(l) } }).child('sync').info('hello')
    expect(lines[0]).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[INFO\] sync: hello$/)
    expect(formatLine('ERROR', 'x', AT, plainPainter)).to.equal(formatLine('ERROR', 'x', AT))
  })

  it('parses -logFormat values and refuses others', () => {
    expect(parseLogFormat(undefined)).to.equal(undefined)
    expect(parseLogFormat('JSON')).to.equal('json')
    expect(parseLogFormat('text')).to.equal('text')
    expect(() => parseLogFormat('yaml')).to.throw(/text or json/)
  })
})

describe('logger: the last WARN and ERROR lines', () => {
  it('keeps the last ten of them, across children, even below the output level', () => {
    const log = createLogger({ level: 'ERROR', write: () => {} })
    log.info('not kept')
    log.warn('w0')
    for (let i = 1; i <= 11; i++) log.child('net').error(`e${i}\u001b`)
    const recent = log.recent!()
    expect(recent).to.have.length(10)
    expect(recent[0]).to.include({ level: 'ERROR', component: 'net', msg: 'net: e2\\x1b' })
    expect(recent[9].msg).to.equal('net: e11\\x1b')
  })

  it('a ring buffer of a given size drops the oldest', () => {
    const r = new RecentLog(2)
    for (const m of ['a', 'b', 'c']) r.push({ time: '', level: 'WARN', msg: m })
    expect(r.list().map((x) => x.msg)).to.deep.equal(['b', 'c'])
  })
})

describe('colour', () => {
  it('decides like chalk: FORCE_COLOR first, then NO_COLOR, then the TTY', () => {
    expect(colourLevel(false, {})).to.equal(0)
    expect(colourLevel(true, {})).to.equal(1)
    expect(colourLevel(true, { TERM: 'dumb' })).to.equal(0)
    expect(colourLevel(true, { TERM: 'xterm-256color' })).to.equal(2)
    expect(colourLevel(true, { COLORTERM: 'truecolor' })).to.equal(3)
    expect(colourLevel(true, { NO_COLOR: '1' })).to.equal(0)
    expect(colourLevel(true, { NO_COLOR: '' })).to.equal(1)
    expect(colourLevel(false, { FORCE_COLOR: '1' })).to.equal(1)
    expect(colourLevel(false, { FORCE_COLOR: '' })).to.equal(1)
    expect(colourLevel(false, { FORCE_COLOR: '3' })).to.equal(3)
    expect(colourLevel(true, { FORCE_COLOR: '0' })).to.equal(0)
    expect(colourLevel(true, { FORCE_COLOR: 'false' })).to.equal(0)
  })

  it('a terminal gets coloured levels, DIDs, transaction ids and amounts; a pipe gets the plain bytes', async () => {
    const did = 'bafybmi' + 'a'.repeat(52)
    const tx = 'f'.repeat(64)
    const msg = `sent 1.5 RBT from ${did} in ${tx}`
    const tty = await painterFor(true, {})
    const line = formatLine('INFO', msg, AT, tty)
    expect(line).to.match(ANSI)
    expect(line.replace(new RegExp(ANSI.source, 'g'), '')).to.equal(formatLine('INFO', msg, AT))
    expect(await painterFor(false, {})).to.equal(plainPainter)
    expect(await painterFor(true, { NO_COLOR: '1' })).to.equal(plainPainter)
    expect(formatLine('INFO', msg, AT, await painterFor(false, {}))).to.equal(formatLine('INFO', msg, AT))
  })

  it('never colours what escaping made visible: escape sequences from a message stay text', async () => {
    const line = formatLine('ERROR', 'bad \u001b[2J', AT, await painterFor(true, {}))
    expect(line).to.include('bad \\x1b[2J')
  })
})
