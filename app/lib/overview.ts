/**
 * The overview figures the console shows, normalised by app/api/summary from the
 * server's A5 answer (and Prometheus, when PROMETHEUS_URL is set). Rates are per second.
 */
export interface AvailabilityWindow {
  /** "1m", "5m", ... as the server names its recent windows. */
  window: string;
  /** Share of L4/L5/L6 answers that were not not_leader/error; null when there was no traffic. */
  ratio: number | null;
  requests?: number;
}

export interface Overview {
  at: number;
  backend: string;
  heldLocks: number;
  activeSessions: number;
  waiters: number;
  /** Acquire answers per second over the last minute, by outcome (granted, contended, ...). */
  acquireRates: Record<string, number>;
  contentionRate: number;
  sessionLossRate: number;
  availability: AvailabilityWindow[];
  slo: {
    objective: number;
    /** From the monitoring recording rules, when Prometheus is configured and answers. */
    burnRate?: { window: string; value: number }[];
    errorBudgetRemaining?: number;
    prometheusError?: string;
  };
  links: { grafana?: string; grafanaSlo?: string; prometheus?: string };
}
