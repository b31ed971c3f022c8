import { outputProblem, renderTable } from './output';

describe('--output table', () => {
  test("a list's items as aligned columns under their field names; null as -, lists comma-separated", () => {
    const out = {
      items: [
        { event_id: 'e1', state: 'abandoned', attempts: 12, last_status: 500, next_attempt_at: null },
        { event_id: 'event-two', state: 'pending', attempts: 1, last_status: null, next_attempt_at: '2027-01-01T00:00:00.000Z' },
      ],
    };
    expect(renderTable(out, ['event_id', 'state', 'attempts', 'last_status', 'next_attempt_at'])).toBe(
      [
        'event_id   state      attempts  last_status  next_attempt_at',
        'e1         abandoned  12        500          -',
        'event-two  pending    1         -            2027-01-01T00:00:00.000Z',
        '',
      ].join('\n'),
    );
    expect(renderTable({ items: [{ id: 'r1', refs: ['a', 'b'], none: [] }] })).toBe('id  refs  none\nr1  a,b   -\n');
  });

  test('an empty list prints the header of its declared columns; other fields go above the table', () => {
    expect(renderTable({ items: [] }, ['client_id', 'name'])).toBe('client_id  name\n');
    expect(renderTable({ replayed: 1, items: [{ event_id: 'e1' }], endpoint_status: 'active' })).toBe('replayed         1\nendpoint_status  active\n\nevent_id\ne1\n');
  });

  test('a record as field/value lines; never a line break inside a cell', () => {
    expect(renderTable({ workspace_id: 'w1', name: 'two\nlines', amount_paid: { value: '1.00', currency: 'EUR' } })).toBe(
      'workspace_id  w1\nname          two lines\namount_paid   {"value":"1.00","currency":"EUR"}\n',
    );
  });

  test('--output takes json or table', () => {
    expect(outputProblem('json')).toBeUndefined();
    expect(outputProblem('table')).toBeUndefined();
    expect(outputProblem('yaml')).toBe('--output must be json or table');
  });
});
