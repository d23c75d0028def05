import { expect } from 'chai'
import { runCommand } from './harness.js'

const LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[(INFO|ERROR|WARN)\] .+$/
const A = '/ip4/127.0.0.1/tcp/4003/p2p/12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'
const B = '/ip4/127.0.0.1/tcp/4004/p2p/12D3KooWSQ94HRDzFf6W2rp7P8gzP6efZQHTaSU8uaQjskVBHiWP'

describe('cli: client commands against a stub transport', function () {
  this.timeout(20_000)

  it('getallbootstrap prints one peer per line on stdout and logs on stderr', async () => {
    const r = await runCommand(['getallbootstrap'], () => ({ body: { status: true, message: 'Got all the bootstrap peers successfully', result: { peers: [A, B] } } }))
    expect(r.code).to.equal(0)
    expect(r.stdout).to.equal(`${A}\n${B}\n`)
    for (const line of r.stderr.trim().split('\n')) expect(line).to.match(LINE)
    expect(r.requests).to.deep.equal([{ method: 'GET', url: 'http://localhost:20000/svc/v1/bootstrap', body: undefined }])
  })

  it('accepts Go-style flags in every spelling', async () => {
    for (const argv of [['-port', '20005', '-peers', `${A},${B}`], ['-port=20005', '-peers=' + A + ',' + B], ['--port', '20005', '--peers', `${A},${B}`]]) {
      const r = await runCommand(['addbootstrap', ...argv], () => ({ body: { status: true, message: 'Bootstrap peers added successfully', result: { peers: [A, B] } } }))
      expect(r.code, r.stderr).to.equal(0)
      expect(r.requests[0]).to.deep.equal({ method: 'POST', url: 'http://localhost:20005/svc/v1/bootstrap/add', body: { peers: [A, B] } })
    }
  })

  it('accepts every flag of the reference CLI on any subcommand', async () => {
    const r = await runCommand(['get-peer-id', '-addr', '127.0.0.1', '-grpcPort', '10500', '-testNet', '-didType', '4', '-privPWD', 'x', '-n', '3', '-s', '-quorumList', 'q.json', '-fp', '-srvName', 'explorer_service', '-transComment', 'hi'],
      () => ({ body: { status: true, message: '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq', result: '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq' } }))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout).to.equal('12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq\n')
    expect(r.requests[0].url).to.equal('http://127.0.0.1:20000/svc/v1/node/peer_id')
  })

  it('--json prints the envelope on stdout', async () => {
    const env = { status: true, message: 'Got all the bootstrap peers successfully', result: { peers: [A] } }
    const r = await runCommand(['getallbootstrap', '--json'], () => ({ body: env }))
    expect(r.code).to.equal(0)
    expect(JSON.parse(r.stdout)).to.deep.equal(env)
  })

  it('a failed call logs [ERROR] with the reason and exits 1', async () => {
    const r = await runCommand(['ping', '-peerID', '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'], () => ({ status: 502, body: { status: false, message: 'peer unreachable', result: { code: 'PEER_UNREACHABLE' } } }))
    expect(r.code).to.equal(1)
    expect(r.stderr.trim()).to.match(LINE)
    expect(r.stderr).to.match(/\[ERROR\] peer unreachable/)
    expect(r.stdout).to.equal('')
  })

  it('a missing required flag is a usage error (exit 2) and sends nothing', async () => {
    const r = await runCommand(['addbootstrap'], () => { throw new Error('must not be called') })
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/\[ERROR\] -peers is required/)
    expect(r.requests).to.have.length(0)
  })

  it('an unknown flag is an error with a suggestion', async () => {
    const r = await runCommand(['getallbootstrap', '-prot', '1'], () => ({ body: {} }))
    expect(r.code).to.not.equal(0)
    expect(r.stderr).to.match(/did you mean -port/)
  })
})
