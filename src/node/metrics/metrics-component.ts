import type { Component, Factory } from '../component/component.js'
import { NodeMetrics } from './node-metrics.js'

/** The node's own Prometheus registry (GET /metrics); other components add their gauges' sources. */
export interface MetricsComponent extends Component {
  metrics: NodeMetrics
}

export const metricsComponent: Factory<{}, MetricsComponent> = () => ({ metrics: new NodeMetrics() })
