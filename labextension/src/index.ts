/**
 * pi-notebook-bridge: lets the pi_notebook agent in a kernel read and edit the notebook that
 * kernel belongs to.
 *
 * The kernel opens a comm on the target `pi_notebook.bridge`. The target is registered on the
 * kernel connection of each notebook panel, so the comm always lands in the panel whose session
 * runs that kernel (not the active one). Requests are `{req, op, ...}`; every request gets one
 * reply `{req, ok, result}` or `{req, ok: false, error, refused}`. Reads and writes go through the
 * notebook's shared model, so an agent's edit is an ordinary document edit: the notebook
 * becomes dirty, the frontend's undo and the checkpoints see it, and nothing is saved for the
 * user. A conflict check (the source the agent read) is done here, in the same turn as the
 * write, so no user keystroke can slip between check and write.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';

const TARGET = 'pi_notebook.bridge';
const PROTOCOL = 1;

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface CellJson {
  id: string;
  cell_type: string;
  source: string;
  metadata?: Json;
  outputs?: Json[];
  execution_count?: number | null;
}

class Refused extends Error {}

function cellsOf(panel: NotebookPanel): Json[] {
  const model = panel.content.model;
  if (!model) {
    throw new Refused('the notebook has no model yet');
  }
  return model.sharedModel.cells as Json[];
}

function cellJson(cell: Json): CellJson {
  const json = cell.toJSON() as CellJson;
  json.source = cell.getSource();
  json.id = cell.getId();
  return json;
}

function indexOf(panel: NotebookPanel, id: string): number {
  const index = cellsOf(panel).findIndex(cell => cell.getId() === id);
  if (index < 0) {
    throw new Refused(`no cell with id ${id} in the notebook (deleted since it was read?)`);
  }
  return index;
}

function checkSource(panel: NotebookPanel, id: string, expect: string | undefined): Json {
  const cell = cellsOf(panel)[indexOf(panel, id)];
  if (expect !== undefined && cell.getSource() !== expect) {
    throw new Refused(`cell ${id} changed since it was read`);
  }
  return cell;
}

function read(panel: NotebookPanel): Json {
  return {
    path: panel.context.path,
    dirty: panel.context.model.dirty,
    cells: cellsOf(panel).map(cellJson)
  };
}

function insert(panel: NotebookPanel, msg: Json): Json {
  const shared = panel.content.model!.sharedModel;
  const cells = cellsOf(panel);
  let index: number = msg.index;
  if (typeof msg.after === 'string') {
    index = indexOf(panel, msg.after) + 1;
  }
  index = Math.max(0, Math.min(index ?? cells.length, cells.length));
  const made = shared.insertCells(index, msg.cells as Json[]);
  return { index, ids: made.map(cell => cell.getId()) };
}

function edit(panel: NotebookPanel, msg: Json): Json {
  const cell = checkSource(panel, msg.id, msg.expect);
  if (msg.cell_type && msg.cell_type !== cell.cell_type) {
    throw new Refused(`cell ${msg.id} is a ${cell.cell_type} cell, not ${msg.cell_type}`);
  }
  cell.setSource(msg.source);
  return { id: msg.id };
}

function remove(panel: NotebookPanel, msg: Json): Json {
  const expect: Json = msg.expect ?? {};
  const ids: string[] = msg.ids;
  for (const id of ids) {
    checkSource(panel, id, expect[id]);
  }
  const shared = panel.content.model!.sharedModel;
  const removed: Json[] = [];
  shared.transact(() => {
    for (const id of ids) {
      const index = indexOf(panel, id);
      removed.push({ index, cell: cellJson(cellsOf(panel)[index]) });
      shared.deleteCell(index);
    }
  });
  return { removed };
}

function setOutputs(panel: NotebookPanel, msg: Json): Json {
  const cell = checkSource(panel, msg.id, msg.expect);
  if (cell.cell_type !== 'code') {
    throw new Refused(`cell ${msg.id} is not a code cell`);
  }
  const before = { outputs: cell.getOutputs(), execution_count: cell.execution_count };
  cell.transact(() => {
    cell.setOutputs(msg.outputs);
    cell.execution_count = msg.execution_count ?? null;
  });
  return before;
}

const OPS: { [op: string]: (panel: NotebookPanel, msg: Json) => Json } = {
  read: panel => read(panel),
  insert,
  edit,
  delete: remove,
  set_outputs: setOutputs
};

function answer(comm: Kernel.IComm, panel: NotebookPanel, msg: KernelMessage.ICommMsgMsg): void {
  const data = msg.content.data as Json;
  const op = OPS[data.op];
  let reply: Json;
  try {
    if (!op) {
      throw new Refused(`unknown request ${JSON.stringify(data.op)}`);
    }
    reply = { req: data.req, ok: true, result: op(panel, data) };
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    reply = { req: data.req, ok: false, error: text, refused: error instanceof Refused };
  }
  comm.send(reply);
}

function frontendName(app: JupyterFrontEnd): string {
  return app.name.includes('Notebook') ? 'Jupyter Notebook' : 'JupyterLab';
}

function watch(app: JupyterFrontEnd, panel: NotebookPanel): void {
  const registered = new WeakSet<Kernel.IKernelConnection>();
  const register = (): void => {
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel || registered.has(kernel)) {
      return;
    }
    registered.add(kernel);
    kernel.registerCommTarget(TARGET, (comm: Kernel.IComm) => {
      comm.onMsg = msg => answer(comm, panel, msg);
      comm.send({
        op: 'hello',
        protocol: PROTOCOL,
        frontend: frontendName(app),
        version: app.version,
        path: panel.context.path
      });
    });
  };
  panel.sessionContext.kernelChanged.connect(register);
  void panel.sessionContext.ready.then(register);
  register();
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'pi-notebook-bridge:plugin',
  description: 'Lets the pi_notebook agent read and edit the notebook its kernel belongs to.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.forEach(panel => watch(app, panel));
    tracker.widgetAdded.connect((_, panel) => watch(app, panel));
  }
};

export default plugin;
