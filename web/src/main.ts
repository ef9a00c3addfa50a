import { startViewer } from './app.ts';
import { loadConfig } from './config.ts';
import { fill, h } from './element.ts';
import { startingToken } from './hosted-sign-in.ts';
import { pageNav } from './pages.ts';
import { signInOnFragmentToken } from './session.ts';

const required = (id: string) => {
  const element = document.getElementById(id);
  if (!element) throw new Error(`index.html has no #${id}`);
  return element;
};

async function boot() {
  required('pages').replaceWith(pageNav('index.html'));
  const { apiBaseUrl, signIn: hosted } = await loadConfig();
  const viewer = startViewer(apiBaseUrl, {
    main: required('main'),
    account: required('account'),
    alert: required('alert'),
  });
  const start = await startingToken(hosted);
  if (start.token) viewer.signIn(start.token);
  else viewer.signOut(start.problem);
  signInOnFragmentToken(viewer.signIn);
}

boot().catch((error: unknown) => {
  const main = document.getElementById('main') ?? document.body;
  fill(
    main,
    h(
      'p',
      { class: 'notice notice-error', role: 'alert' },
      `The audit viewer could not start: ${error instanceof Error ? error.message : String(error)}`,
    ),
  );
});
