"""The published-version store, whole: which version is current and how to open it
(``versions``), writing a version with its change records and event (``publish``), the part
files versions share (``parts``), the rows a build recomputed (``rebuilt_rows``), one publisher at
a time (``lock``), comparing two versions (``diff``), removing old versions (``retention``) and
copying versions through an object-store bucket (``bucket``, ``fetching``)."""
