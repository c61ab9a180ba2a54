import { type Scope, type Session, callOptions } from '../session.js';
import { Status, useLoad, when } from '../ui.js';

export function UsagePage({ session, scope }: { session: Session; scope: Scope }) {
  const plan = useLoad(() => session.control.billing.currentPlan(callOptions(scope)), [scope.organizationId]);
  return (
    <Status loading={plan.loading} error={plan.error}>
      {plan.data && (
        <>
          <p>
            Plan <strong>{plan.data.plan}</strong>, period {when(plan.data.period_start)} – {when(plan.data.period_end)}
          </p>
          <table>
            <thead>
              <tr>
                <th>Quota</th>
                <th>Used</th>
                <th>Allowance</th>
              </tr>
            </thead>
            <tbody>
              {Object.entries(plan.data.allowances).map(([name, allowance]) => (
                <tr key={name}>
                  <td>{name.replace('_', ' ')}</td>
                  <td>{(plan.data!.usage as Record<string, number | null>)[name] ?? 0}</td>
                  <td>
                    {allowance ?? 'unlimited'}
                    {allowance ? (
                      <>
                        {' '}
                        <progress
                          max={allowance}
                          value={(plan.data!.usage as Record<string, number | null>)[name] ?? 0}
                          aria-label={`${name} used`}
                        />
                      </>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </Status>
  );
}
