#!/bin/bash
# Runs inside the box (clients.sh's "git" run): git clone over https through
# the gateway (git reads https_proxy and GIT_SSL_CAINFO from the box).
# Usage (in the box): box_git.sh PARAMS.sh   (sets P, OUT, GIT_TOKEN is a phantom)
set -u
. "$1"
mkdir -p "$OUT"
cd "$OUT"
export GIT_TERMINAL_PROMPT=0
G=https://git.test:$P
git clone -q "$G/git/repo.git" plain >clone.out 2>&1
echo $? >clone.rc
git -C plain log --format=%s -1 >clone.log 2>&1
git ls-remote "$G/git/repo.git" >lsremote.out 2>&1
echo $? >lsremote.rc
# git authenticates lazily, so the phantom goes up front (Box's advice)
git -c http.extraHeader="Authorization: Bearer $GIT_TOKEN" clone -q "$G/auth-git/repo.git" auth >auth.out 2>&1
echo $? >auth.rc
# without the header the route refuses: the phantom is missing
git clone -q "$G/auth-git/repo.git" noauth >noauth.out 2>&1
echo $? >noauth.rc
# a push is a POST to git-receive-pack, which the policy does not permit
git -C plain -c user.email=t@t -c user.name=t commit -q --allow-empty -m from-the-box
git -C plain push -q origin HEAD:refs/heads/from-box >push.out 2>&1
echo $? >push.rc
echo done >done
