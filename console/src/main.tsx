import { render } from 'preact';
import './console.css';

function App() {
  return <main><h1>Partner Sync sandbox console</h1></main>;
}

render(<App />, document.getElementById('app')!);
