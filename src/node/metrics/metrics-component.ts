import type { Component, Factory } from '../component/component.js'
import { NodeMetrics } from './node-metrics.js'
import { DirectorySize, HeapAfterGc } from './resource-watch.js'

/** The node's own Prometheus registry (GET /metrics); other components add their gauges' sources. */
export interface MetricsComponent extends Component {
  metrics: NodeMetrics
}

/** How often the data directory is walked for `rbtnode_data_dir_bytes` at most (RBTNODE_DATA_DIR_SCAN_MS). */
const DATA_DIR_SCAN_MS = 60_000

export const metricsComponent: Factory<{}, MetricsComponent> = ({ base }) => {
  const metrics = new NodeMetrics()
  const heap = new HeapAfterGc()
  const scanMs = Number(process.env.RBTNODE_DATA_DIR_SCAN_MS ?? DATA_DIR_SCAN_MS)
  const dataDir = new DirectorySize(base.layout.root, Number.isFinite(scanMs) && scanMs >= 0 ? scanMs : DATA_DIR_SCAN_MS)
  metrics.setSources({ heapAfterGc: () => heap.read(), dataDirBytes: () => dataDir.read() })
  return {
    metrics,
    start: () => { heap.start(); void dataDir.refresh() },
    stop: () => { heap.stop() }
  }
}
