import { expect } from 'chai'
import { createLogger, escapeControl, formatLine } from '../../../src/util/logger.js'

const AT = new Date('2024-05-01T12:00:00.000Z')

describe('util/logger: one message is one line', () => {
  it('ordinary messages keep their exact bytes', () => {
    for (const msg of ['DID bafybmiabc created', 'path C:\\data\\node and "quotes" {json: 1}', 'naïve — ünïcödé ✓ 🚀', '']) {
      expect(formatLine('INFO', msg, AT)).to.equal(`2024-05-01T12:00:00.000Z [INFO] ${msg}`)
    }
  })

  it('newlines, carriage returns and tabs are escaped, so a request string cannot forge a line', () => {
    const forged = 'bafybmi\n2024-05-01T12:00:01.000Z [ERROR] shutting down\r\n\tmore'
    const line = formatLine('INFO', `unknown DID ${forged}`, AT)
    expect(line).to.equal('2024-05-01T12:00:00.000Z [INFO] unknown DID bafybmi\\n2024-05-01T12:00:01.000Z [ERROR] shutting down\\r\\n\\tmore')
    expect(line.split('\n')).to.have.length(1)
  })

  it('other C0 and C1 controls, DEL, ANSI escape sequences and Unicode line separators become visible text', () => {
    expect(escapeControl('a\u0000b\u0007c\u001b[31mred\u001b[0m\u007fd\u0085e\u009bf\u2028g\u2029h'))
      .to.equal('a\\x00b\\x07c\\x1b[31mred\\x1b[0m\\x7fd\\x85e\\x9bf\\u2028g\\u2029h')
    for (let c = 0; c < 0x20; c++) expect(escapeControl(String.fromCharCode(c))).to.not.match(/[\u0000-\u001f]/)
    for (let c = 0x7f; c <= 0x9f; c++) expect(escapeControl(String.fromCharCode(c))).to.match(/^\\x[0-9a-f]{2}$/)
  })

  it('every line a logger writes is one line, its prefix included', () => {
    const lines: string[] = []
    const log = createLogger({ level: 'DEBUG', write: (l) => { lines.push(l) } }).child('peer\nX')
    log.info('a\nb')
    log.error('c\r\n[INFO] d')
    expect(lines).to.have.length(2)
    for (const l of lines) expect(l).to.not.match(/[\r\n]/)
    expect(lines[0]).to.match(/ \[INFO\] peer\\nX: a\\nb$/)
    expect(lines[1]).to.match(/ \[ERROR\] peer\\nX: c\\r\\n\[INFO\] d$/)
  })
})
