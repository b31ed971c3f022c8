/** The sandbox console's entry: renders the shell (app.tsx) into the page. */
import { render } from 'preact';
import { App } from './app';
import './console.css';

const root = document.getElementById('app');
if (root) render(<App />, root);
