/**
 * A bridge from a unix socket to a TCP port, run inside a network namespace:
 *
 *   ip netns exec <ns> node dist/test/helpers/ns-bridge.js <socket file> <port>
 *
 * Each connection to the socket file is piped to 127.0.0.1:<port> of the namespace. Socket files
 * live in the file system, which both namespaces share, so the test process (root namespace)
 * reaches a node's HTTP API inside the namespace through it. Prints `ready` once listening and
 * exits when its standard input closes (its parent went away).
 */
import { connect, createServer, type Socket } from 'node:net'
import { rmSync } from 'node:fs'

function main (): void {
  const [socketPath, portText] = process.argv.slice(2)
  const port = Number(portText)
  if (socketPath === undefined || !Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write('usage: ns-bridge <socket file> <port>\n')
    process.exit(2)
  }
  rmSync(socketPath, { force: true })
  const open = new Set<Socket>()
  const server = createServer((down) => {
    const up = connect(port, '127.0.0.1')
    open.add(down)
    open.add(up)
    const end = (): void => {
      down.destroy()
      up.destroy()
      open.delete(down)
      open.delete(up)
    }
    down.on('error', end).on('close', end)
    up.on('error', end).on('close', end)
    down.pipe(up)
    up.pipe(down)
  })
  const quit = (): void => {
    for (const s of open) s.destroy()
    server.close()
    rmSync(socketPath, { force: true })
    process.exit(0)
  }
  server.on('error', (e) => { process.stderr.write(`ns-bridge: ${e.message}\n`); process.exit(1) })
  server.listen(socketPath, () => { process.stdout.write('ready\n') })
  process.stdin.on('end', quit)
  process.stdin.on('close', quit)
  process.stdin.resume()
  process.on('SIGTERM', quit)
  process.on('SIGINT', quit)
}

main()
