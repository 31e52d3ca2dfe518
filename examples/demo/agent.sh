#!/bin/sh
# The demo's "agent": Box's headline story, done with the real git and npm in a
# mediated box, git being a tool (its own sandbox, the forge's credential).
# Each step says what it tries; cairn's decisions follow live.
cd /tmp/cairn-demo/proj || exit 1
step() { printf '\n\033[1magent: %s\033[0m\n' "$*"; }

step "I introduce a bug, stage it and commit"
sed -i 's/a + b/a - b/' index.js
git add index.js && git commit -qm "refactor add" && echo "  committed"
step "npm test (it fails: the bug)"
npm test --silent; echo "  npm test exited $?"
step "I write to .git myself: refused, the repository is git's"
echo junk > .git/refs/heads/mine; echo "  exited $?"
step "git push: refused, the tests are not green since the last git add"
git push -q origin main; echo "  git push exited $?"
step "I fix the bug, stage, commit, and run the tests again"
sed -i 's/a - b/a + b/' index.js
git add index.js && git commit -qm "fix add" && echo "  committed"
npm test --silent; echo "  npm test exited $?"
step "git push: permitted now, and it reaches the forge with a credential I never see"
git push -q origin main; echo "  git push exited $?"
step "the forge, called by me instead of git: no credential, so 401"
curl -s -o /dev/null -w '  HTTP %{http_code}\n' "https://git.test:47443/basic-git/remote.git/info/refs?service=git-receive-pack"
step "rm -rf build: the fixtures stay, everything else goes"
rm -rf build; echo "  rm exited $?; left: $(find build -type f 2>/dev/null | tr '\n' ' ')"
step "a request to example.com (permitted; this sandbox has no internet, so it fails upstream)"
curl -s -o /dev/null -w '  HTTP %{http_code}\n' http://example.com/
step "reading .env: refused, and egress is closed from now on"
cat .env; echo "  cat exited $?"
curl -s -o /dev/null -w '  HTTP %{http_code}\n' http://example.com/
exit 0
