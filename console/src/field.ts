/**
 * `useField`: a form control whose value the component holds, so a re-render (a quota
 * update in the header, a list arriving) never resets what the partner typed or chose.
 * Spread the result on an `<input>` or a `<select>` (both fire `input`). The form's
 * component is keyed by the route, so a new route starts from its values.
 */
import { useState } from 'preact/hooks';

export interface Field {
  value: string;
  onInput: (e: Event) => void;
}

export function useField(initial: string): Field {
  const [value, setValue] = useState(initial);
  return { value, onInput: (e) => setValue((e.currentTarget as HTMLInputElement | HTMLSelectElement).value) };
}
