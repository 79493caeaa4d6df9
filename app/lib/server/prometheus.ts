/**
 * SLO burn rate and error budget from the monitoring issue's recording rules,
 * read from Prometheus when PROMETHEUS_URL is set. A failure here never hides the
 * server's own figures; it is reported next to them.
 */
import { prometheusUrl } from './config';

/**
 * S1's allowed error ratio (1 − objective) as the generated rules record it, so an objective
 * changed in monitoring.config.yaml reaches the console without a second copy of it here.
 */
const ERROR_BUDGET_RATIO = 'scalar(holdfast:slo_error_budget:ratio)';

/**
 * Built on the recording rules alerts/holdfast-slo.rules.yml generates. Burn rate is the
 * error ratio over the budget ratio; max() over backends shows the worst one.
 */
export const BURN_RATE_RULES = ['5m', '1h', '6h'].map((window) => ({
  window,
  expr: `max(holdfast:slo_errors:ratio_rate${window}) / ${ERROR_BUDGET_RATIO}`,
}));
export const BUDGET_REMAINING_RULE = `1 - max(holdfast:slo_errors:ratio_increase30d) / ${ERROR_BUDGET_RATIO}`;

async function instant(base: string, expr: string): Promise<number | undefined> {
  const response = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(expr)}`, {
    cache: 'no-store',
    signal: AbortSignal.timeout(2_000),
  });
  if (!response.ok) throw new Error(`Prometheus answered ${response.status}`);
  const body = (await response.json()) as { data?: { result?: { value?: [number, string] }[] } };
  const value = body.data?.result?.[0]?.value?.[1];
  return value === undefined ? undefined : Number(value);
}

export async function readSloFromPrometheus(): Promise<
  { burnRate?: { window: string; value: number }[]; errorBudgetRemaining?: number; prometheusError?: string } | undefined
> {
  const base = prometheusUrl();
  if (!base) return undefined;
  try {
    const burns: { window: string; value: number | undefined }[] = await Promise.all(
      BURN_RATE_RULES.map(async (rule) => ({ window: rule.window, value: await instant(base, rule.expr) })),
    );
    const budget = await instant(base, BUDGET_REMAINING_RULE);
    return {
      burnRate: burns.flatMap((b) => (b.value !== undefined && Number.isFinite(b.value) ? [{ window: b.window, value: b.value }] : [])),
      errorBudgetRemaining: budget,
    };
  } catch (cause) {
    return { prometheusError: cause instanceof Error ? cause.message : String(cause) };
  }
}
