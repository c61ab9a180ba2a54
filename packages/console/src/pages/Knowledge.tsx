import { useState } from 'react';
import type { ServiceClient } from '@engram/client';
import type { Scope } from '../session.js';
import { EndUserPicker } from '../service-key.js';
import { Status, useAction, useLoad, when } from '../ui.js';

/** What one end user's memories imply: current facts, the entity graph, clusters, and open decisions to resolve. */
export function KnowledgePage({
  service,
  endUser,
  onEndUser,
  scope,
}: {
  service: ServiceClient;
  endUser: string | undefined;
  onEndUser: (endUser: string) => void;
  scope: Scope;
}) {
  return (
    <>
      <EndUserPicker endUser={endUser} onPick={onEndUser} label="Show knowledge" />
      {endUser && <EndUserKnowledge key={endUser} service={service} endUser={endUser} scope={scope} />}
    </>
  );
}

type Graph = Awaited<ReturnType<typeof graphOf>>;
const graphOf = (service: ServiceClient, endUser: string) =>
  service.call('intelligence.graph', { query: { limit: 200 } }, { endUserId: endUser });

function EndUserKnowledge({ service, endUser, scope }: { service: ServiceClient; endUser: string; scope: Scope }) {
  const options = { endUserId: endUser };
  const [tick, setTick] = useState(0);
  const graph = useLoad(() => graphOf(service, endUser), [endUser, tick]);
  const clusters = useLoad(
    () => service.call('intelligence.clusters', { query: { limit: 20 } }, options),
    [endUser, tick],
  );
  const decisions = useLoad(
    () => service.call('intelligence.decisions', { query: { status: 'open', limit: 50 } }, options),
    [endUser, tick],
  );
  const resolve = useAction();
  const [resolved, setResolved] = useState<string>();
  // A viewer sees no action that changes what is remembered; the key's scopes are checked by the server anyway.
  const mayResolve = scope.role !== 'viewer';
  const settle = (
    id: number,
    body: { resolution: 'keep_one' | 'keep_both' | 'dismiss'; memory_id?: number },
    what: string,
  ) =>
    resolve
      .run(() => service.call('intelligence.resolveDecision', { path: { decision_id: id }, body }, options))
      .then((ok) => {
        if (!ok) return;
        setResolved(`Decision ${id} resolved: ${what}.`);
        setTick((t) => t + 1);
      });
  return (
    <>
      <h2>Current facts</h2>
      <Status
        loading={graph.loading}
        error={graph.error}
        empty={graph.data !== undefined && currentFacts(graph.data).length === 0}
      >
        {graph.data && <Facts graph={graph.data} />}
      </Status>

      <h2>Open decisions</h2>
      {resolved && <p role="status">{resolved}</p>}
      {resolve.error && (
        <p role="alert" className="error">
          {resolve.error}
        </p>
      )}
      <Status loading={decisions.loading} error={decisions.error} empty={decisions.data?.items.length === 0}>
        <ul className="decisions">
          {decisions.data?.items.map((d) => (
            <li key={d.id} data-testid={`decision-${d.id}`} className="panel">
              <p>
                <strong>{d.subject.name}</strong> · {d.attribute.replace(/_/g, ' ')} ·{' '}
                {d.kind === 'negation' ? 'stated and denied' : 'two values'}
              </p>
              <ul>
                {d.values.map((v) => (
                  <li key={v.memory_id}>
                    {v.negated ? 'not ' : ''}“{v.value}” (memory {v.memory_id}, {when(v.stated_at)})
                    {mayResolve && (
                      <>
                        {' '}
                        <button
                          type="button"
                          disabled={resolve.busy}
                          onClick={() =>
                            settle(d.id, { resolution: 'keep_one', memory_id: v.memory_id }, `kept “${v.value}”`)
                          }
                        >
                          Keep “{v.value}”
                        </button>
                      </>
                    )}
                  </li>
                ))}
              </ul>
              <p className="muted">
                Suggested: {d.suggested_resolution.resolution.replace('_', ' ')} ({d.suggested_resolution.reason})
              </p>
              {mayResolve && (
                <p>
                  <button
                    type="button"
                    disabled={resolve.busy}
                    onClick={() => settle(d.id, { resolution: 'keep_both' }, 'both kept')}
                  >
                    Keep both
                  </button>{' '}
                  <button
                    type="button"
                    disabled={resolve.busy}
                    onClick={() => settle(d.id, { resolution: 'dismiss' }, 'dismissed')}
                  >
                    Dismiss
                  </button>
                </p>
              )}
            </li>
          ))}
        </ul>
      </Status>

      <h2>Entity graph</h2>
      <Status loading={graph.loading} error={graph.error} empty={graph.data?.nodes.length === 0}>
        {graph.data && <GraphDrawing graph={graph.data} />}
      </Status>

      <h2>Clusters</h2>
      <Status loading={clusters.loading} error={clusters.error} empty={clusters.data?.items.length === 0}>
        <table>
          <thead>
            <tr>
              <th>Topic</th>
              <th>Memories</th>
              <th>Terms</th>
            </tr>
          </thead>
          <tbody>
            {clusters.data?.items.map((c) => (
              <tr key={c.id}>
                <td>{c.label}</td>
                <td>{c.size}</td>
                <td>{c.terms.join(', ')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Status>
    </>
  );
}

const nameOf = (graph: Graph, id: string) => graph.nodes.find((n) => n.id === id)?.name ?? id;
const currentFacts = (graph: Graph) => graph.edges.filter((e) => e.invalid_at === null);

function Facts({ graph }: { graph: Graph }) {
  return (
    <table aria-label="Current facts">
      <thead>
        <tr>
          <th>Subject</th>
          <th>Relation</th>
          <th>Value</th>
          <th>Since</th>
          <th>From memories</th>
        </tr>
      </thead>
      <tbody>
        {currentFacts(graph).map((e) => (
          <tr key={e.id}>
            <td>{nameOf(graph, e.source)}</td>
            <td>{e.type.replace(/_/g, ' ')}</td>
            <td>{nameOf(graph, e.target)}</td>
            <td>{when(e.valid_at)}</td>
            <td>{e.memory_ids.join(', ')}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The graph drawn: the end user in the middle, the other entities on a circle; an ended fact dashed. */
function GraphDrawing({ graph }: { graph: Graph }) {
  const size = 520;
  const middle = size / 2;
  const others = graph.nodes.filter((n) => !n.is_end_user);
  const at = new Map<string, { x: number; y: number }>();
  for (const n of graph.nodes) if (n.is_end_user) at.set(n.id, { x: middle, y: middle });
  others.forEach((n, i) => {
    const angle = (2 * Math.PI * i) / Math.max(1, others.length) - Math.PI / 2;
    at.set(n.id, { x: middle + Math.cos(angle) * (middle - 70), y: middle + Math.sin(angle) * (middle - 40) });
  });
  return (
    <svg
      role="img"
      aria-label={`Entity graph: ${graph.nodes.length} entities, ${graph.edges.length} facts`}
      viewBox={`0 0 ${size} ${size}`}
      width={size}
      height={size}
      className="graph"
    >
      {graph.edges.map((e) => {
        const a = at.get(e.source);
        const b = at.get(e.target);
        if (!a || !b) return null;
        const ended = e.invalid_at !== null;
        return (
          <g key={e.id} className={ended ? 'ended' : 'current'}>
            <line x1={a.x} y1={a.y} x2={b.x} y2={b.y} strokeDasharray={ended ? '4 4' : undefined} />
            <text x={(a.x + b.x) / 2} y={(a.y + b.y) / 2 - 4} textAnchor="middle">
              {e.type.replace(/_/g, ' ')}
              {ended ? ' (ended)' : ''}
            </text>
          </g>
        );
      })}
      {graph.nodes.map((n) => {
        const p = at.get(n.id)!;
        return (
          <g key={n.id} className={n.is_end_user ? 'node self' : 'node'}>
            <circle cx={p.x} cy={p.y} r={n.is_end_user ? 26 : 20} />
            <text x={p.x} y={p.y + 4} textAnchor="middle">
              {n.name}
            </text>
            <title>{`${n.name} (${n.type}); memories ${n.memory_ids.join(', ')}`}</title>
          </g>
        );
      })}
    </svg>
  );
}
