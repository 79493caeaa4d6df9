/**
 * Panel and variable helpers shared by the Holdfast dashboards. Every panel
 * made here has a description, a unit, thresholds and Prometheus targets bound
 * to the `$datasource` variable, so no dashboard can forget one.
 */
import type * as cog from '@grafana/grafana-foundation-sdk/cog';
import {
  DatasourceVariableBuilder,
  MappingType,
  QueryVariableBuilder,
  ThresholdsConfigBuilder,
  ThresholdsMode,
  VariableRefresh,
  VariableSort,
  type Threshold,
} from '@grafana/grafana-foundation-sdk/dashboard';
import {
  BigValueColorMode,
  BigValueGraphMode,
  GraphDrawStyle,
  GraphThresholdsStyleConfigBuilder,
  GraphThresholdsStyleMode,
  LegendDisplayMode,
  LegendPlacement,
  ReduceDataOptionsBuilder,
  VisibilityMode,
  VizLegendOptionsBuilder,
} from '@grafana/grafana-foundation-sdk/common';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder as StatPanelBuilder } from '@grafana/grafana-foundation-sdk/stat';
import { PanelBuilder as StateTimelinePanelBuilder } from '@grafana/grafana-foundation-sdk/statetimeline';
import { PanelBuilder as TimeseriesPanelBuilder } from '@grafana/grafana-foundation-sdk/timeseries';

export const DATASOURCE = { type: 'prometheus', uid: '${datasource}' } as const;

/** Grafana variables the queries use, for the label matchers of raw selectors. */
export const FILTER = {
  backend: 'backend=~"$backend"',
  instance: 'instance=~"$instance"',
  /** The lock policy (SPEC v3 "teams"), on the families with a `policy` label; "All" includes keys under none. */
  policy: 'policy=~"$policy"',
} as const;

/** Rate window that follows the scrape interval and the zoom level (Grafana ≥ 7.2). */
export const RATE_INTERVAL = '$__rate_interval';

export interface Query {
  readonly expr: string;
  readonly legend: string;
}

/** Colour steps from the lowest value up; the first step's value is always `null` (−∞). */
export type Steps = readonly [string, ...(readonly [number, string])[]];

export interface PanelSpec {
  readonly id: number;
  readonly title: string;
  /** What the panel shows and what to do when it looks wrong. */
  readonly description: string;
  readonly unit: string;
  readonly queries: readonly Query[];
  readonly steps: Steps;
  readonly width: number;
  readonly height?: number;
  readonly decimals?: number;
  readonly min?: number;
}

function thresholds(steps: Steps): ThresholdsConfigBuilder {
  const [base, ...rest] = steps;
  const list: Threshold[] = [{ value: null, color: base }, ...rest.map(([value, color]) => ({ value, color }))];
  return new ThresholdsConfigBuilder().mode(ThresholdsMode.Absolute).steps(list);
}

function targets(queries: readonly Query[]): cog.Builder<cog.Dataquery>[] {
  return queries.map((query, index) =>
    new DataqueryBuilder()
      .datasource(DATASOURCE)
      .expr(query.expr)
      .legendFormat(query.legend)
      .refId(String.fromCharCode(65 + index)),
  );
}

function legend(): VizLegendOptionsBuilder {
  return new VizLegendOptionsBuilder().showLegend(true).displayMode(LegendDisplayMode.List).placement(LegendPlacement.Bottom);
}

export interface TimeseriesOptions {
  /** Draw the threshold steps as dashed lines (for burn rates, latency objectives). */
  readonly thresholdLines?: boolean;
  readonly bars?: boolean;
}

export function timeseries(spec: PanelSpec, options: TimeseriesOptions = {}): TimeseriesPanelBuilder {
  const panel = new TimeseriesPanelBuilder()
    .id(spec.id)
    .title(spec.title)
    .description(spec.description)
    .datasource(DATASOURCE)
    .targets(targets(spec.queries))
    .unit(spec.unit)
    .thresholds(thresholds(spec.steps))
    .thresholdsStyle(
      new GraphThresholdsStyleConfigBuilder().mode(options.thresholdLines ? GraphThresholdsStyleMode.Dashed : GraphThresholdsStyleMode.Off),
    )
    .legend(legend())
    .fillOpacity(10)
    .span(spec.width)
    .height(spec.height ?? 8);
  if (options.bars) panel.drawStyle(GraphDrawStyle.Bars).fillOpacity(80);
  if (spec.decimals !== undefined) panel.decimals(spec.decimals);
  if (spec.min !== undefined) panel.min(spec.min);
  return panel;
}

export function stat(spec: PanelSpec): StatPanelBuilder {
  const panel = new StatPanelBuilder()
    .id(spec.id)
    .title(spec.title)
    .description(spec.description)
    .datasource(DATASOURCE)
    .targets(targets(spec.queries))
    .unit(spec.unit)
    .thresholds(thresholds(spec.steps))
    .colorMode(BigValueColorMode.Background)
    .graphMode(BigValueGraphMode.None)
    .reduceOptions(new ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false))
    .span(spec.width)
    .height(spec.height ?? 5);
  if (spec.decimals !== undefined) panel.decimals(spec.decimals);
  return panel;
}

/**
 * A state timeline of 0/1 series (e.g. `ALERTS`), 1 drawn as `onText` in the last step's colour and,
 * when `offText` is given, 0 as `offText` in the first step's colour (else 0 shows only its colour).
 */
export function stateTimeline(spec: PanelSpec, onText: string, offText?: string): StateTimelinePanelBuilder {
  const onColor = spec.steps.length > 1 ? (spec.steps[spec.steps.length - 1] as readonly [number, string])[1] : spec.steps[0];
  const texts: Record<string, { text: string; color: string; index: number }> = { '1': { text: onText, color: onColor, index: 0 } };
  if (offText !== undefined) texts['0'] = { text: offText, color: spec.steps[0], index: 1 };
  return new StateTimelinePanelBuilder()
    .id(spec.id)
    .title(spec.title)
    .description(spec.description)
    .datasource(DATASOURCE)
    .targets(targets(spec.queries))
    .unit(spec.unit)
    .thresholds(thresholds(spec.steps))
    .mappings([{ type: MappingType.ValueToText, options: texts }])
    .showValue(VisibilityMode.Never)
    .legend(legend())
    .span(spec.width)
    .height(spec.height ?? 6);
}

export function datasourceVariable(): DatasourceVariableBuilder {
  return new DatasourceVariableBuilder('datasource').label('Data source').type('prometheus');
}

/** A multi-select label variable over `label_values(metric, label)`, "All" = `.*`. */
export function labelVariable(name: string, label: string, metricSelector: string, description: string): QueryVariableBuilder {
  const query = `label_values(${metricSelector}, ${label})`;
  return new QueryVariableBuilder(name)
    .label(label)
    .description(description)
    .datasource(DATASOURCE)
    .query(query)
    .definition(query)
    .refresh(VariableRefresh.OnTimeRangeChanged)
    .sort(VariableSort.AlphabeticalAsc)
    .multi(true)
    .includeAll(true)
    .allValue('.*')
    .current({ text: 'All', value: '$__all' });
}
