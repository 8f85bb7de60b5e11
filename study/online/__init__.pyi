from . import (
    admin_routes as admin_routes,
    app as app,
    assignment as assignment,
    deps as deps,
    export as export,
    browser_keys as browser_keys,
    loadtest as loadtest,
    metrics as metrics,
    page_routes as page_routes,
    participant_routes as participant_routes,
    queries as queries,
    scoring as scoring,
    server as server,
    service as service,
    status as status,
    storage as storage,
)
from .assignment import (
    choose_list as choose_list,
    list_manifest as list_manifest,
    split_lists as split_lists,
)
from .export import (
    export_online as export_online,
)
from .browser_keys import (
    BROWSER_CODES as BROWSER_CODES,
    browser_key_name as browser_key_name,
)
from .server import (
    serve as serve,
)
