'use client';
/** A small time-series chart over the rolling overview history. */
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import type { HistoryPoint } from './history';

export interface Series {
  key: keyof HistoryPoint;
  name: string;
  color: string;
}

function clock(at: number): string {
  const d = new Date(at);
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}:${String(d.getSeconds()).padStart(2, '0')}`;
}

export function TimeChart({
  title,
  points,
  series,
  format,
  testId,
  domain,
}: {
  title: string;
  points: HistoryPoint[];
  series: Series[];
  format: (value: number) => string;
  testId: string;
  domain?: [number | 'auto' | ((dataMin: number) => number), number | 'auto'];
}) {
  return (
    <figure className="card chart" data-testid={testId} data-points={points.length}>
      <figcaption>
        {title} <span className="muted">· last {points.length > 1 ? Math.round((points[points.length - 1]!.at - points[0]!.at) / 1000) : 0} s</span>
      </figcaption>
      {points.length < 2 ? (
        <div className="chart-empty muted">Collecting points… the chart fills in as the page polls.</div>
      ) : (
        <div className="chart-body" role="img" aria-label={`${title} over the last few minutes`}>
          <ResponsiveContainer width="100%" height={150}>
            <LineChart data={points} margin={{ top: 6, right: 10, bottom: 0, left: 0 }}>
              <CartesianGrid stroke="#2a3340" strokeDasharray="3 3" />
              <XAxis dataKey="at" type="number" domain={['dataMin', 'dataMax']} tickFormatter={clock} stroke="#8b98a9" fontSize={11} minTickGap={40} />
              <YAxis stroke="#8b98a9" fontSize={11} width={66} tickFormatter={format} domain={domain ?? [0, 'auto']} allowDecimals />
              <Tooltip
                labelFormatter={(label) => clock(Number(label))}
                formatter={(value) => format(Number(value))}
                contentStyle={{ background: '#111820', border: '1px solid #2a3340', fontSize: 12 }}
              />
              <Legend wrapperStyle={{ fontSize: 12 }} />
              {series.map((s) => (
                <Line key={s.key} type="linear" dataKey={s.key} name={s.name} stroke={s.color} dot={false} isAnimationActive={false} strokeWidth={2} connectNulls />
              ))}
            </LineChart>
          </ResponsiveContainer>
        </div>
      )}
    </figure>
  );
}
