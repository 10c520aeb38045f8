SELECT $a$ ' $a$; DROP TABLE Genre; -- '
