// A cache in front of the user service, which is slow and rate-limited.

/** Returns getUser(id), which fetches each user once and then answers from memory. */
export function createUserCache(fetchUser) {
  const cache = new Map();
  return async function getUser(id) {
    if (cache.has(id)) return cache.get(id);
    const user = await fetchUser(id);
    cache.set(id, user);
    return user;
  };
}
