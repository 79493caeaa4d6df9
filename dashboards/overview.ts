/**
 * "Holdfast — lock service overview": the SRE's first stop. Top row answers
 * "are we meeting S1?", the rows below show why (traffic, latency, contention,
 * sessions, waits, store, scrape health).
 */
import { DashboardBuilder, RowBuilder } from '@grafana/grafana-foundation-sdk/dashboard';
import { STORE_WRITE_OPS, groupingLabels, humanSeconds, type MonitoringConfig } from '../alerts/config.js';
import { sloModel } from '../alerts/slo.js';
import * as units from '@grafana/grafana-foundation-sdk/units';
import { datasourceVariable, FILTER, labelVariable, stat, stateTimeline, timeseries } from './panels.js';
import { METRICS, STORE_BAD_OUTCOMES, dashboardQueries, increaseOf, rateOf } from './queries.js';

export const OVERVIEW_UID = 'holdfast-overview';
export const BURN_UNIT = 'suffix:×';

export function overviewDashboard(config: MonitoringConfig): DashboardBuilder {
  const by = groupingLabels(config).join(', ');
  const legend = groupingLabels(config).map((label) => `{{${label}}}`).join(' ');
  const slo = sloModel(config);
  const T = config.thresholds;
  const { server, sdk, quantile, burnRate } = dashboardQueries(config);
  const fastTier = slo.burnTiers[0]!;
  const slowestPageTier = slo.burnTiers.find((t) => t.action === 'page' && t !== fastTier) ?? fastTier;
  const board = new DashboardBuilder('Holdfast — lock service overview')
    .uid(OVERVIEW_UID)
    .description('Availability SLO S1, traffic, latency, contention, sessions, waits and store health of Holdfast lock servers.')
    .tags(['holdfast', 'locks', 'generated'])
    .refresh('30s')
    .time({ from: 'now-6h', to: 'now' })
    .timezone('browser')
    .editable()
    .withVariable(datasourceVariable());
  const fleet = dashboardQueries(config).clusterVariable;
  if (fleet) board.withVariable(labelVariable(fleet.name, fleet.name, fleet.selector, 'Fleet (cluster) the servers belong to.'));
  return board
    .withVariable(labelVariable('backend', 'backend', METRICS.lockHeld.name, 'Store backend the servers run on.'))
    .withVariable(
      labelVariable('instance', 'instance', `${METRICS.lockHeld.name}{${FILTER.backend}}`, 'Holdfast server instance (scrape target).'),
    )
    .withVariable(
      labelVariable(
        'policy',
        'policy',
        `${METRICS.lockHeld.name}{${FILTER.backend}}`,
        'Lock policy (HOLDFAST_POLICIES_FILE) of the held-lock panels; All includes keys under no policy.',
      ),
    )
    .withRow(new RowBuilder('Availability SLO S1').id(100))
    .withPanel(
      stat({
        id: 1,
        title: 'S1 availability (30 d)',
        description:
          `Share of acquire, renew and release requests over the last 30 days not answered not_leader or error, per backend, ` +
          `from increase() over the whole window. Objective ${slo.objectivePercent}. Red means the objective is already missed: ` +
          `freeze risky changes and open the SLO dashboard to see which window burned the budget.`,
        unit: units.PercentUnit,
        decimals: 3,
        queries: [{ expr: dashboardQueries(config).availability, legend }],
        steps: ['red', [slo.objective, 'green']],
        width: 6,
      }),
    )
    .withPanel(
      stat({
        id: 2,
        title: 'Error budget remaining (30 d)',
        description:
          'Share of the 30-day error budget not yet spent (1 − error ratio ÷ budget); negative when overspent. ' +
          'Orange below 25 %: slow down releases. Red: the budget is gone; follow runbooks/holdfast-error-budget-slow-burn.md.',
        unit: units.PercentUnit,
        decimals: 1,
        queries: [{ expr: dashboardQueries(config).budgetRemaining, legend }],
        steps: ['red', [0, 'orange'], [0.25, 'green']],
        width: 6,
      }),
    )
    .withPanel(
      timeseries(
        {
          id: 3,
          title: 'Burn rate (1 h and 6 h)',
          description:
            'How fast the error budget burns, as a multiple of the rate that spends it exactly in 30 days. ' +
            `Dashed lines are the paging thresholds (${fastTier.factor}× over ${fastTier.long}, ${slowestPageTier.factor}× over ${slowestPageTier.long}). ` +
            'Above them the fast-burn alert pages: check the acquire outcome panel for not_leader/error and the store panels.',
          unit: BURN_UNIT,
          queries: [
            { expr: burnRate(fastTier.long), legend: `${fastTier.long} ${legend}` },
            { expr: burnRate(slowestPageTier.long), legend: `${slowestPageTier.long} ${legend}` },
          ],
          steps: ['green', [slowestPageTier.factor, 'orange'], [fastTier.factor, 'red']],
          width: 12,
          height: 5,
          min: 0,
        },
        { thresholdLines: true },
      ),
    )
    .withRow(new RowBuilder('Requests').id(101))
    .withPanel(
      timeseries({
        id: 4,
        title: 'Acquire rate by outcome',
        description:
          'L4 acquire answers per second by outcome. granted and contended are healthy answers; not_leader and error spend the ' +
          'error budget (see the NOT_LEADER runbook); a rise in session_not_found means clients use expired sessions; invalid is a client bug.',
        unit: units.RequestsPerSecond,
        queries: [{ expr: `sum by (outcome) (${rateOf(server(METRICS.lockAcquireSeconds, 'count'))})`, legend: '{{outcome}}' }],
        steps: ['green'],
        width: 12,
        min: 0,
      }),
    )
    .withPanel(
      timeseries(
        {
          id: 5,
          title: 'Acquire latency p50 / p99',
          description:
            'Time to answer an acquire, from the lock_acquire_seconds histogram, including any server-side wait (waitMillis). ' +
            'A p99 near the clients\' waitMillis is normal under contention; a rising p50 without contention points at the store: ' +
            'check "Store latency p99 by op".',
          unit: units.Seconds,
          queries: [
            { expr: quantile(0.5, METRICS.lockAcquireSeconds), legend: 'p50' },
            { expr: quantile(0.99, METRICS.lockAcquireSeconds), legend: 'p99' },
          ],
          steps: ['green', [0.25, 'orange'], [1, 'red']],
          width: 12,
          min: 0,
        },
        { thresholdLines: true },
      ),
    )
    .withPanel(
      timeseries({
        id: 6,
        title: 'Renew and release rate by outcome',
        description:
          'L5 renew and L6 release answers per second. lost means the lock expired or was revoked before the holder renewed or ' +
          'released it: its holder must stop using the fencing token. Many renew lost answers usually follow a session-loss spike.',
        unit: units.RequestsPerSecond,
        queries: [
          { expr: `sum by (outcome) (${rateOf(server(METRICS.lockRenewTotal))})`, legend: 'renew {{outcome}}' },
          { expr: `sum by (outcome) (${rateOf(server(METRICS.lockReleaseTotal))})`, legend: 'release {{outcome}}' },
        ],
        steps: ['green'],
        width: 12,
        min: 0,
      }),
    )
    .withPanel(
      timeseries({
        id: 7,
        title: 'Contention rate by reason',
        description:
          'Acquires refused per second: contended (another session holds the key, a correct answer) or exceeded (a contention ' +
          'budget was spent, 429). Sustained exceeded answers mean clients retry a hot key too eagerly: find it on the console\'s /locks page.',
        unit: units.RequestsPerSecond,
        queries: [{ expr: `sum by (reason) (${rateOf(server(METRICS.lockContentionTotal))})`, legend: '{{reason}}' }],
        steps: ['green'],
        width: 12,
        min: 0,
      }),
    )
    .withRow(new RowBuilder('Locks and sessions').id(102))
    .withPanel(
      timeseries({
        id: 8,
        title: 'Held locks',
        description:
          'Locks held in the store, per backend and lock policy (blank: keys under no policy; every instance reads the same store, so ' +
          'the panel takes the max over instances, not the sum). ' +
          'A steady climb without more traffic means holders forget to release and rely on TTL expiry: list them with `holdfast locks ls`.',
        unit: units.Short,
        queries: [{ expr: `max by (${by}, policy) (${server(METRICS.lockHeld)})`, legend: `${legend} {{policy}}` }],
        steps: ['green'],
        width: 8,
        min: 0,
      }),
    )
    .withPanel(
      timeseries(
        {
          id: 9,
          title: 'Waiters',
          description:
            'Acquire requests waiting server-side (waitMillis > 0), summed over instances. The red line is the ' +
            'waiters-piling-up alert threshold: find the hot key on the console\'s /locks page and whether its holder is stuck.',
          unit: units.Short,
          queries: [{ expr: `sum by (${by}) (${server(METRICS.lockWaiters)})`, legend }],
          steps: ['green', [T.waiters, 'red']],
          width: 8,
          min: 0,
        },
        { thresholdLines: true },
      ),
    )
    .withPanel(
      timeseries({
        id: 10,
        title: 'Active sessions',
        description:
          'Sessions alive in the store, per backend (max over instances: all read the same store). A sudden drop together with ' +
          'TTL expiries means clients lost their heartbeats (network, GC pauses, a stalled store).',
        unit: units.Short,
        queries: [{ expr: `max by (${by}) (${server(METRICS.lockSessionsActive)})`, legend }],
        steps: ['green'],
        width: 8,
        min: 0,
      }),
    )
    .withPanel(
      timeseries({
        id: 11,
        title: 'Session expiry and loss',
        description:
          'Sessions ended per second by cause: ttl (no heartbeat in time, the harmful one), closed (normal shutdown), killed (an ' +
          'operator). "lost (SDK)" is what SDK clients report, present only if client processes are scraped. A ttl spike is the ' +
          'session-loss alert: see runbooks/holdfast-session-loss-spike.md.',
        unit: units.OpsPerSecond,
        queries: [
          { expr: `sum by (cause) (${rateOf(server(METRICS.lockSessionExpiredTotal))})`, legend: '{{cause}}' },
          { expr: `sum (${rateOf(sdk(METRICS.lockSessionLostTotal))})`, legend: 'lost (SDK)' },
        ],
        steps: ['green'],
        width: 8,
        min: 0,
      }),
    )
    .withPanel(
      timeseries(
        {
          id: 12,
          title: 'Force-revokes by outcome',
          description:
            'Operator force-revokes (A3) per interval by outcome. Every bar is an audited admin action: check who and why with ' +
            '`holdfast audit` or the console\'s /audit page. Many token_mismatch results mean operators revoke with stale tokens.',
          unit: units.Short,
          queries: [{ expr: `sum by (outcome) (${increaseOf(server(METRICS.lockForceRevokeTotal))})`, legend: '{{outcome}}' }],
          steps: ['green'],
          width: 8,
          min: 0,
        },
        { bars: true },
      ),
    )
    .withPanel(
      timeseries(
        {
          id: 13,
          title: 'Deadlock cycles',
          description:
            'Cycles in the wait-for graph of sessions waiting on each instance. Anything above 0 for minutes means clients take the ' +
            'same keys in different orders; acquireAll() takes them in canonical order. See runbooks/holdfast-deadlock-detected.md.',
          unit: units.Short,
          queries: [{ expr: `max by (instance) (${server(METRICS.lockDeadlockCycles)})`, legend: '{{instance}}' }],
          steps: ['green', [1, 'red']],
          width: 8,
          min: 0,
        },
        { thresholdLines: true },
      ),
    )
    .withPanel(
      timeseries({
        id: 23,
        title: 'Heartbeats by outcome',
        description:
          'Session heartbeats answered per second, by outcome: alive (extended), session_not_found (the session had already ' +
          'lapsed or ended: its client lost it), unauthenticated (a wrong session token), not_leader and error. Heartbeats are the ' +
          'steady load of a fleet (every client session, holding or not); a rise in session_not_found goes with session loss.',
        unit: units.RequestsPerSecond,
        queries: [{ expr: `sum by (outcome) (${rateOf(server(METRICS.lockHeartbeatTotal))})`, legend: '{{outcome}}' }],
        steps: ['green'],
        width: 8,
        min: 0,
      }),
    )
    .withRow(new RowBuilder('Lock age and sweeper').id(105))
    .withPanel(
      timeseries(
        {
          id: 19,
          title: 'Oldest held lock',
          description:
            'Age of the oldest lock held in the store, per backend and lock policy (max over instances: one store). The red line is the ' +
            `generic lock-held-too-long alert threshold (${humanSeconds(T.lockHeldTooLongSeconds)}); a policy with maxHoldMillis alerts at its own. ` +
            'A line that climbs steadily is one holder keeping its lock: find it with `holdfast locks ls --sort age` and follow ' +
            'runbooks/holdfast-lock-held-too-long.md (runbooks/lock-held-past-policy.md for a policy).',
          unit: units.Seconds,
          queries: [{ expr: `max by (${by}, policy) (${server(METRICS.lockOldestHeldSeconds)})`, legend: `${legend} {{policy}}` }],
          steps: ['green', [T.lockHeldTooLongSeconds, 'red']],
          width: 8,
          min: 0,
        },
        { thresholdLines: true },
      ),
    )
    .withPanel(
      timeseries({
        id: 20,
        title: 'Lock hold duration p50 / p99 by outcome',
        description:
          'How long locks were held, grant to end, from lock_hold_seconds, by how the hold ended: released (by the holder), ' +
          'expired (TTL passed), revoked (an operator) or session_ended. A rising expired share means holders crash or forget ' +
          'to release; a p99 near the TTL means holders rely on expiry.',
        unit: units.Seconds,
        queries: [
          { expr: quantile(0.5, METRICS.lockHoldSeconds, ['outcome']), legend: 'p50 {{outcome}}' },
          { expr: quantile(0.99, METRICS.lockHoldSeconds, ['outcome']), legend: 'p99 {{outcome}}' },
        ],
        steps: ['green'],
        width: 8,
        min: 0,
      }),
    )
    .withPanel(
      timeseries(
        {
          id: 21,
          title: 'Sweep lag',
          description:
            'Age of the oldest session or lock expiry that is overdue and not yet swept, per instance. Near 0 is healthy; the red ' +
            `line is the sweep-lagging alert threshold (${humanSeconds(T.sweepLagSeconds)}). Above it, keys of dead holders stay locked: ` +
            'see runbooks/holdfast-sweep-lagging.md.',
          unit: units.Seconds,
          queries: [{ expr: `max by (${by}, instance) (${server(METRICS.lockSweepLagSeconds)})`, legend: `${legend} {{instance}}` }],
          steps: ['green', [T.sweepLagSeconds, 'red']],
          width: 8,
          min: 0,
        },
        { thresholdLines: true },
      ),
    )
    .withRow(new RowBuilder('Server-side waits').id(103))
    .withPanel(
      timeseries({
        id: 14,
        title: 'Wait outcomes (incl. fallback)',
        description:
          'How server-side waits ended, per second: released (woken by a release), deadline (waitMillis passed), aborted (client ' +
          'went away) and fallback (the release watch failed and the server polled instead). Fallback above a few percent means ' +
          'broken watches: see runbooks/holdfast-wait-fallback-rate.md.',
        unit: units.RequestsPerSecond,
        queries: [{ expr: `sum by (outcome) (${rateOf(server(METRICS.lockWaitSeconds, 'count'))})`, legend: '{{outcome}}' }],
        steps: ['green'],
        width: 12,
        min: 0,
      }),
    )
    .withPanel(
      timeseries({
        id: 15,
        title: 'Wait duration p50 / p99',
        description:
          'Time waits lasted, by quantile, from lock_wait_seconds. Bounded by the clients\' waitMillis (at most 30 s). A p50 ' +
          'close to waitMillis means most waiters time out: holders keep locks longer than waiters expect.',
        unit: units.Seconds,
        queries: [
          { expr: quantile(0.5, METRICS.lockWaitSeconds), legend: 'p50' },
          { expr: quantile(0.99, METRICS.lockWaitSeconds), legend: 'p99' },
        ],
        steps: ['green'],
        width: 12,
        min: 0,
      }),
    )
    .withRow(new RowBuilder('Store').id(104))
    .withPanel(
      stateTimeline(
        {
          id: 24,
          title: 'Store health (server view)',
          description:
            'Each server\'s own view of its store (lock_store_up): up, or down while its store calls fail or outlive their timeout ' +
            '(a store that accepts connections but never answers is down too). While down, that server answers lock requests 503 NOT_LEADER ' +
            'at once and HoldfastStoreUnreachable pages. Every instance down: the store itself; one instance: its network path or ' +
            'connection pool (runbooks/holdfast-store-unreachable.md).',
          unit: units.Short,
          queries: [{ expr: `min by (${by}, instance) (${server(METRICS.lockStoreUp)})`, legend: `${legend} {{instance}}` }],
          steps: ['red', [1, 'green']],
          width: 24,
          height: 5,
        },
        'up',
        'down',
      ),
    )
    .withPanel(
      timeseries(
        {
          id: 16,
          title: 'Store latency p99 by op',
          description:
            'p99 latency of each store operation. The red line is the store-slow alert threshold for request-path writes ' +
            `(${STORE_WRITE_OPS.join(', ')}). Slow writes delay heartbeats and can expire sessions: check the database/etcd first.`,
          unit: units.Seconds,
          queries: [{ expr: quantile(0.99, METRICS.lockStoreSeconds, ['op']), legend: '{{op}}' }],
          steps: ['green', [T.storeWriteP99Seconds, 'red']],
          width: 12,
          min: 0,
        },
        { thresholdLines: true },
      ),
    )
    .withPanel(
      timeseries({
        id: 17,
        title: 'Store failures by op',
        description:
          'Store operations per second that ended not_leader (the backend refuses writes) or error. Any sustained not_leader is ' +
          'the NOT_LEADER runbook; errors come with an INTERNAL request id in the server log.',
        unit: units.OpsPerSecond,
        queries: [
          {
            expr: `sum by (op, outcome) (${rateOf(server(METRICS.lockStoreSeconds, 'count', { outcome: STORE_BAD_OUTCOMES }))})`,
            legend: '{{op}} {{outcome}}',
          },
        ],
        steps: ['green'],
        width: 12,
        min: 0,
      }),
    )
    .withPanel(
      timeseries({
        id: 18,
        title: 'Scrape targets up',
        description:
          `1 when Prometheus scraped the Holdfast server (${config.jobSelector}) successfully, 0 when not. A 0 hides that server ` +
          'from every other panel: see runbooks/holdfast-target-down.md.',
        unit: units.Short,
        queries: [{ expr: dashboardQueries(config).up, legend: '{{instance}}' }],
        steps: ['red', [1, 'green']],
        width: 16,
        height: 5,
        min: 0,
      }),
    )
    .withPanel(
      stat({
        id: 22,
        title: 'Versions running',
        description:
          'Server instances per Holdfast version and Node.js version, from holdfast_build_info. More than one version outside a ' +
          'rolling deploy means some instances were not upgraded: compare with the deploy and restart the stragglers.',
        unit: units.Short,
        decimals: 0,
        queries: [
          {
            expr: `count by (version, node_version) (${dashboardQueries(config).info(METRICS.holdfastBuildInfo)})`,
            legend: '{{version}} on Node {{node_version}}',
          },
        ],
        steps: ['green'],
        width: 8,
      }),
    );
}
