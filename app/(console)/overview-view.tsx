'use client';
/** Overview: the figures on-call checks first, live, with small charts of the last minutes. */
import Link from 'next/link';
import type { ReactNode } from 'react';
import { TimeChart } from '../components/chart';
import { useHistory } from '../components/history';
import { LiveControl } from '../components/live';
import { ErrorState, Loading } from '../components/query-state';
import { useSummary } from '../components/use-summary';
import { formatPercent, formatRate } from '../lib/format';
import type { Overview } from '../lib/overview';
import { InsightCards } from './insight-cards';

export function OverviewView() {
  const summary = useSummary();
  const history = useHistory();
  const data = summary.data;
  return (
    <>
      <div className="page-head">
        <h1>Overview</h1>
        <LiveControl updatedAt={summary.dataUpdatedAt} fetching={summary.isFetching} failing={summary.isError} />
      </div>
      {!data && summary.isError ? <ErrorState error={summary.error} what="the overview" /> : null}
      {!data && summary.isPending ? <Loading what="the overview" /> : null}
      {data ? (
        <>
          <Figures data={data} />
          <InsightCards />
          <section className="charts" aria-label="Recent history">
            <TimeChart
              testId="chart-held"
              title="Held locks, waiters, sessions"
              points={history}
              format={(v) => String(Math.round(v))}
              series={[
                { key: 'held', name: 'held', color: '#5aa9ff' },
                { key: 'waiters', name: 'waiters', color: '#ffb347' },
                { key: 'sessions', name: 'sessions', color: '#8fd18f' },
              ]}
            />
            <TimeChart
              testId="chart-acquire"
              title="Acquire rate by outcome (1m)"
              points={history}
              format={(v) => formatRate(v)}
              series={[
                { key: 'granted', name: 'granted', color: '#8fd18f' },
                { key: 'contended', name: 'contended', color: '#ffb347' },
                { key: 'otherAcquire', name: 'other (errors, invalid, no session)', color: '#ff6b6b' },
              ]}
            />
            <TimeChart
              testId="chart-loss"
              title="Contention and session loss (1m)"
              points={history}
              format={(v) => formatRate(v)}
              series={[
                { key: 'contention', name: 'contention', color: '#ffb347' },
                { key: 'sessionLoss', name: 'session loss', color: '#ff6b6b' },
              ]}
            />
            <TimeChart
              testId="chart-availability"
              title={`S1 availability (${data.availability[0]?.window ?? 'recent'} window)`}
              points={history}
              format={(v) => formatPercent(v, 2)}
              domain={[(dataMin: number) => Math.max(0, Math.min(0.99, dataMin)), 1]}
              series={[{ key: 'availability', name: 'availability', color: '#5aa9ff' }]}
            />
          </section>
        </>
      ) : null}
    </>
  );
}

function Figures({ data }: { data: Overview }) {
  const granted = data.acquireRates.granted ?? 0;
  const totalAcquire = Object.values(data.acquireRates).reduce((s, v) => s + v, 0);
  const grafana = data.links.grafana;
  return (
    <section className="figures" aria-label="Current figures">
      <Figure label="Held locks" value={String(data.heldLocks)} testId="fig-held" href="/locks" grafana={grafana} />
      <Figure label="Active sessions" value={String(data.activeSessions)} testId="fig-sessions" href="/sessions" grafana={grafana} />
      <Figure label="Waiters" value={String(data.waiters)} testId="fig-waiters" tone={data.waiters > 0 ? 'warn' : undefined} grafana={grafana} />
      <Figure
        label="Acquire rate (1m)"
        value={formatRate(totalAcquire)}
        testId="fig-acquire"
        grafana={grafana}
        note={
          <>
            {Object.entries(data.acquireRates)
              .filter(([, v]) => v > 0)
              .map(([outcome, v]) => `${outcome} ${formatRate(v)}`)
              .join(' · ') || 'no acquires in the last minute'}
          </>
        }
        sub={totalAcquire > 0 ? `${formatPercent(granted / totalAcquire, 0)} granted` : undefined}
      />
      <Figure label="Contention (1m)" value={formatRate(data.contentionRate)} testId="fig-contention" tone={data.contentionRate > 0 ? 'warn' : undefined} grafana={grafana} />
      <Figure label="Session loss (1m)" value={formatRate(data.sessionLossRate)} testId="fig-session-loss" tone={data.sessionLossRate > 0 ? 'bad' : undefined} grafana={grafana} note="sessions that expired or were killed" />
      <SloCard data={data} />
    </section>
  );
}

function Figure({
  label,
  value,
  testId,
  tone,
  note,
  sub,
  href,
  grafana,
}: {
  label: string;
  value: string;
  testId: string;
  tone?: 'warn' | 'bad';
  note?: ReactNode;
  sub?: string;
  href?: string;
  grafana?: string;
}) {
  return (
    <div className={`card figure${tone ? ` tone-${tone}` : ''}`} data-testid={testId}>
      <div className="figure-label">{label}</div>
      <div className="figure-value" data-testid={`${testId}-value`}>
        {value}
      </div>
      {sub ? <div className="figure-sub">{sub}</div> : null}
      {note ? <div className="figure-note muted">{note}</div> : null}
      <div className="figure-links">
        {href ? <Link href={href}>Open</Link> : null}
        {grafana ? (
          <a href={grafana} target="_blank" rel="noreferrer">
            Grafana
          </a>
        ) : null}
      </div>
    </div>
  );
}

function SloCard({ data }: { data: Overview }) {
  const { slo, availability } = data;
  const breaching = availability.some((w) => w.ratio !== null && w.ratio < slo.objective);
  return (
    <div className={`card figure slo${breaching ? ' tone-bad' : ''}`} data-testid="fig-slo">
      <div className="figure-label">S1 availability (objective {formatPercent(slo.objective, 1)})</div>
      <table className="mini">
        <tbody>
          {availability.map((w) => (
            <tr key={w.window}>
              <th scope="row">{w.window}</th>
              <td data-testid={`slo-${w.window}`}>{w.ratio === null ? 'no traffic' : formatPercent(w.ratio)}</td>
            </tr>
          ))}
          {slo.burnRate?.map((b) => (
            <tr key={`burn-${b.window}`}>
              <th scope="row">burn {b.window}</th>
              <td>{b.value.toFixed(2)}×</td>
            </tr>
          ))}
          {slo.errorBudgetRemaining !== undefined ? (
            <tr>
              <th scope="row">budget left (30d)</th>
              <td>{formatPercent(slo.errorBudgetRemaining, 1)}</td>
            </tr>
          ) : null}
        </tbody>
      </table>
      {slo.prometheusError ? <div className="figure-note muted">Prometheus: {slo.prometheusError}</div> : null}
      <div className="figure-links">
        {data.links.grafanaSlo ? (
          <a href={data.links.grafanaSlo} target="_blank" rel="noreferrer">
            Grafana SLO dashboard
          </a>
        ) : null}
      </div>
    </div>
  );
}
