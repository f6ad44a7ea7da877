// The desktop opener's argument vector on each platform (issue 20 items 2
// and 10; protocol/opener.ts): never a shell (`cmd /c start "" URL` read `&`
// in a hostile authorization URL as a command separator), the target one
// argument, unchanged, and only ever the file:// address of a redirect page;
// the page itself sends the browser on to an http(s) URL only, escaped.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { openerCommand, redirectPageHtml } from '../../protocol/opener.ts';

const SHELLS = /^(cmd|cmd\.exe|powershell|powershell\.exe|pwsh|sh|bash|start)$/i;
const HOSTILE_DIRS = ['a & b', 'x|y', 'c^d', '%PATH%', 'q"uote', "s'ingle", 'sp ace', 'semi;colon', '$(id)', '`id`', 'a,b'];

t.test('each platform: a program and the target as one argument, no shell', async (t) => {
  for (const platform of ['linux', 'darwin', 'win32', 'freebsd'] as const) {
    for (const dir of HOSTILE_DIRS) {
      const target =
        platform === 'win32'
          ? pathToFileURL(`C:\\Users\\${dir}\\.albedo\\ui-open\\0123.html`, { windows: true }).href
          : pathToFileURL(`/home/${dir}/.albedo/ui-open/0123.html`).href;
      const { file, args } = openerCommand(platform, target);
      t.notMatch(file, SHELLS, `${platform}: ${file} is not a shell`);
      t.equal(args.at(-1), target, `${platform} ${JSON.stringify(dir)}: the target is the last argument, unchanged`);
      t.equal(args.filter((a) => a === target).length, 1, 'once');
      for (const a of args.slice(0, -1)) t.notOk(a.includes(dir), 'no other argument holds any of it');
      t.notOk(
        args.some((a) => /^\/c$/i.test(a) || /^start$/i.test(a)),
        'no cmd /c start',
      );
      if (platform === 'win32') {
        // Windows' command-line quoting (libuv's quote_cmd_arg) leaves an argument with no space, tab or quote as it is:
        // rundll32 hands the rest of its command line to FileProtocolHandler, so the target must need no quoting.
        t.notMatch(target, /[\s"]/, 'the Windows target needs no quoting');
      }
    }
  }
  t.same(openerCommand('linux', 'file:///p.html'), { file: 'xdg-open', args: ['file:///p.html'] });
  t.same(openerCommand('darwin', 'file:///p.html'), { file: 'open', args: ['file:///p.html'] });
  t.same(openerCommand('win32', 'file:///C:/p.html'), { file: 'rundll32.exe', args: ['url.dll,FileProtocolHandler', 'file:///C:/p.html'] });
});

t.test('only a page is opened: a URL itself is refused', async (t) => {
  for (const url of [
    'https://as.example.com/authorize?state=S&code_challenge=C',
    'http://127.0.0.1:1/ui/login?code=X',
    'javascript:alert(1)',
    '',
  ]) {
    for (const platform of ['linux', 'darwin', 'win32'] as const)
      t.throws(() => openerCommand(platform, url), `${platform}: ${url || '(empty)'}`);
  }
});

t.test('on this machine the vector reaches the program unchanged (no shell between)', async (t) => {
  const { args } = openerCommand(process.platform, pathToFileURL(`/tmp/${HOSTILE_DIRS.join('/')}/p.html`).href);
  // The node binary stands in for the opener: it prints the arguments it was given.
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(JSON.stringify(process.argv.slice(1)))', ...args], {
    encoding: 'utf8',
    shell: false,
  });
  t.same(JSON.parse(r.stdout), args);
});

t.test('the redirect page: an http(s) URL, escaped; anything else refused', async (t) => {
  const url =
    'https://as.example.com/authorize?response_type=code&state=S1&code_challenge=C1&redirect_uri=http%3A%2F%2F127.0.0.1%3A1%2Fcallback';
  const html = redirectPageHtml(url, 'Continue')!;
  t.ok(html.includes(`content="0;url=${url.replace(/&/g, '&amp;')}"`), 'a meta refresh to the URL, & escaped');
  t.ok(html.includes(`href="${url.replace(/&/g, '&amp;')}"`), 'and a link');
  t.notMatch(html, /<script/i, 'no script');
  const hostile = redirectPageHtml('https://as.example.com/a"><script>alert(1)</script>?x=\'"<>', 'Continue')!;
  t.notMatch(hostile, /<script/i, "markup in the URL stays out of the page's markup");
  t.equal(hostile.match(/"/g)!.length % 2, 0, 'quotes balanced');
  for (const bad of ['javascript:alert(1)', 'file:///etc/passwd', 'data:text/html,<script>x</script>', 'not a url', 'vbscript:x']) {
    t.equal(redirectPageHtml(bad, 'Continue'), null, `refused: ${bad}`);
  }
});
